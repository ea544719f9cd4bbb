// End-to-end CLI tests: run the real plumb binary and check exit codes, messages, JSON output,
// what lands in the database, and that bad input and SIGKILL never damage stored results.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <SQLiteCpp/SQLiteCpp.h>
#include <nlohmann/json.hpp>

#include "cli_fixture.h"
#include "plumb/platform/blas_check.h"
#include "plumb/platform/cpu_features.h"
#include "plumb/store/profile_records.h"
#include "plumb/store/results_store.h"
#include "plumb/store/run_record.h"
#include "stored_identity.h"

namespace plumb {
namespace {

namespace fs = std::filesystem;
using testing::Cli;
using testing::Result;
using testing::slurp;

TEST_F(Cli, ListAndInfoJson) {
  Result list = plumb("list --json");
  ASSERT_EQ(list.code, 0) << list.err;
  auto j = nlohmann::json::parse(list.out);
  EXPECT_GE(j["workloads"].size(), 3u);

  Result info = plumb("info resnet50 --json");
  ASSERT_EQ(info.code, 0) << info.err;
  auto i = nlohmann::json::parse(info.out);  // stdout is exactly one JSON document
  EXPECT_EQ(i["params"], 25557032);
  // One 224x224 image through the traced forward pass: convolutions + FC, counted by the cost
  // model from the real operator calls (torchvision's published figure is 4.09 GMACs).
  EXPECT_EQ(i["forward_macs"].get<double>(), 4089184256.0);
  EXPECT_GT(i["forward_flops"].get<double>(), 2 * 4089184256.0);  // + BN, ReLU, pooling, adds
  EXPECT_EQ(i["throughput_unit"], "images/s");
  bool found_fc = false;
  for (const auto& l : i["layers"])
    if (l["name"] == "fc") {
      found_fc = true;
      EXPECT_EQ(l["output_shape"], nlohmann::json::array({1, 1000}));
      EXPECT_EQ(l["params"], 2049000);
    }
  EXPECT_TRUE(found_fc);
}

// The reference zoo: every model of the four sources, under its canonical name, in its
// suites (Fathom, TBD, ParaDnn's real models, the Facebook inference study's Table 1).
TEST_F(Cli, ListHasEveryReferenceModelInItsSuites) {
  const std::map<std::string, std::vector<std::string>> suites_of = {
      {"fathom",
       {"seq2seq", "memnet", "speech", "autoenc", "residual", "vgg19", "alexnet", "deepq"}},
      {"tbd",
       {"resnet50", "inception_v3", "gnmt", "transformer", "faster_rcnn", "deepspeech2", "wgan_gp",
        "a3c"}},
      {"paradnn-real",
       {"transformer", "resnet50", "retinanet", "densenet121", "mobilenet_v1", "squeezenet1_0"}},
      {"inference",
       {"dlrm", "resnext101_32x4d", "resnext101_32x48d", "faster_rcnn_shufflenet", "resnext3d",
        "seq2seq_gru"}}};
  for (const auto& [suite, names] : suites_of) {
    Result r = plumb("list --suite " + suite + " --json");
    ASSERT_EQ(r.code, 0) << r.err;
    std::set<std::string> listed;
    const auto j = nlohmann::json::parse(r.out);  // named: a range-for over a temporary dangles
    for (const auto& w : j["workloads"]) {
      listed.insert(w["name"].get<std::string>());
      const auto& s = w["suites"];
      EXPECT_NE(std::find(s.begin(), s.end(), suite), s.end()) << w["name"];
    }
    for (const auto& name : names) EXPECT_EQ(listed.count(name), 1u) << name << " in " << suite;
  }
  // Several suites at once: each workload once.
  Result both = plumb("list --suite fathom,tbd --json");
  ASSERT_EQ(both.code, 0) << both.err;
  EXPECT_EQ(nlohmann::json::parse(both.out)["workloads"].size(), 16u);
  expect_usage_error("suite --suite fathom,nosuch --db " + db(), "unknown suite 'nosuch'");
}

TEST_F(Cli, RunJsonHasTheDocumentedFieldsAndSamplesAreStored) {
  auto j = plumb_json(quick_run_args());
  EXPECT_EQ(j["status"], "ok");
  EXPECT_EQ(j["throughput_unit"], "images/s");
  EXPECT_GT(j["throughput"].get<double>(), 0);
  for (const char* k : {"mean", "median", "min", "p5", "p95", "max", "stddev", "cv", "ci_rel", "n"})
    EXPECT_TRUE(j["step_time"].contains(k)) << k;
  auto store = store::ResultsStore::open(db(), /*read_only=*/true);
  auto runs = store->load_runs(/*with_samples=*/true);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].result.samples_s.size(), j["step_time"]["n"].get<size_t>());
  EXPECT_FALSE(runs[0].result.warmup_s.empty());
  EXPECT_EQ(runs[0].environment.threads_used, 1);
}

// Without --threads a run uses every CPU this process may use, as LibTorch would, and says so.
// plumb records which OpenBLAS kernels its GEMMs ran on. Left to itself it never runs the pre-AVX
// fallback on a CPU with wider vector units (it restarts with the matching ones); a user's own
// OPENBLAS_CORETYPE is kept, and when it names that fallback the run is warned about. (This
// test binary does not restart: what OpenBLAS picks here says nothing about plumb.)
TEST_F(Cli, RunsRecordTheOpenBlasKernelsAndNeverTheFallbackUnasked) {
  if (platform::detect_blas().core.empty())
    GTEST_SKIP() << "needs LibTorch on OpenBLAS (its BLAS here is another)";
  const char* given = std::getenv("OPENBLAS_CORETYPE");  // the fixture's, or the user's
  const bool had = given != nullptr;
  const std::string saved = had ? given : "";
  unsetenv("OPENBLAS_CORETYPE");
  const auto own = plumb_json(quick_run_args());
  const std::string blas = own["environment"]["blas"];
  EXPECT_NE(blas.find("(OpenBLAS kernels: "), std::string::npos) << blas;
  EXPECT_EQ(own["environment"]["warnings"].dump().find("pre-AVX"), std::string::npos)
      << own["environment"].dump();

  const std::string fix = platform::openblas_core_for("Prescott", platform::detect_cpu_features());
  ASSERT_EQ(setenv("OPENBLAS_CORETYPE", "Prescott", 1), 0);
  const Result forced = plumb(quick_run_args() + " --json --db " + db());
  if (had)
    setenv("OPENBLAS_CORETYPE", saved.c_str(), 1);
  else
    unsetenv("OPENBLAS_CORETYPE");
  ASSERT_EQ(forced.code, 0) << forced.err;
  const auto j = nlohmann::json::parse(forced.out);
  EXPECT_NE(j["environment"]["blas"].get<std::string>().find("(OpenBLAS kernels: Prescott)"),
            std::string::npos)
      << j["environment"].dump();
  const bool warned = j["environment"]["warnings"].dump().find("pre-AVX") != std::string::npos;
  EXPECT_EQ(warned, !fix.empty()) << j["environment"].dump();
  EXPECT_EQ(forced.err.find("OPENBLAS_CORETYPE") != std::string::npos, !fix.empty()) << forced.err;
}

TEST_F(Cli, ThreadsDefaultToTheUsableCpus) {
  std::string args = quick_run_args();
  args.erase(args.find("--threads 1 "), std::string("--threads 1 ").size());
  Result r = plumb(args + " --db " + db());
  ASSERT_EQ(r.code, 0) << r.err;
  const int cpus = static_cast<int>(platform::allowed_cpus().size());
  EXPECT_NE(r.out.find(fmt::format("--threads {} ", cpus)), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(fmt::format("of {} thread(s)", cpus)), std::string::npos) << r.out;
  auto store = store::ResultsStore::open(db(), /*read_only=*/true);
  EXPECT_EQ(store->load_runs(false).at(0).threads, cpus);
}

TEST_F(Cli, BadArgumentsAreUsageErrors) {
  expect_usage_error("run resnet5 --db " + db(), "did you mean 'resnet50'");
  expect_usage_error("list --suite nosuch", "unknown suite");
  expect_usage_error("run autoenc --batch 0 --db " + db(), "--batch must be at least 1");
  expect_usage_error("run autoenc --batch -4 --db " + db(), "--batch must be at least 1");
  expect_usage_error("run autoenc --threads 0 --db " + db(), "--threads must be at least 1");
  expect_usage_error("run autoenc --target-ci 0 --db " + db(), "--target-ci");
  expect_usage_error("run autoenc --target-ci 2 --db " + db(), "--target-ci");
  expect_usage_error("run autoenc --target-ci abc --db " + db(), "target-ci");
  expect_usage_error("run autoenc --mode fly --db " + db(), "mode must be 'train' or 'infer'");
  expect_usage_error("run autoenc --set hiden=3 --db " + db(), "did you mean 'hidden'");
  expect_usage_error("run autoenc --device tpu --db " + db(), "unknown device");
  expect_usage_error("export --db " + db() + " --format xml", "--format must be csv or json");
  expect_usage_error("frobnicate", "");
  EXPECT_FALSE(fs::exists(db())) << "a refused command must not create a database";
}

TEST_F(Cli, TooManyThreadsWarnsAndRuns) {
  // One more than the machine has is enough to be refused a core; far more only slows the test.
  const unsigned too_many = std::max(1u, std::thread::hardware_concurrency()) + 1;
  Result r = plumb(quick_run_args() + " --threads " + std::to_string(too_many) +
                   " --max-iters 5 --db " + db());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("exceeds"), std::string::npos) << r.err;
}

TEST_F(Cli, UnusableDatabasesAreRefusedAndLeftUntouched) {
  expect_usage_error(quick_run_args() + " --db " + (dir_ / "missing" / "x.db").string(), "x.db");
  expect_usage_error(quick_run_args() + " --db " + dir_.string(), dir_.string());

  const fs::path text = dir_ / "notes.db";
  std::ofstream(text) << "these are my notes, not a database\n";
  expect_usage_error(quick_run_args() + " --db " + text.string(), "not a plumb");
  EXPECT_EQ(slurp(text), "these are my notes, not a database\n");

  // A plumb database from a newer plumb: refused, bytes unchanged.
  const fs::path newer = dir_ / "newer.db";
  ASSERT_EQ(plumb(quick_run_args() + " --db " + newer.string()).code, 0);
  {
    SQLite::Database d(newer.string(), SQLite::OPEN_READWRITE);
    d.exec("PRAGMA user_version = " + std::to_string(store::kSchemaVersion + 1));
  }
  const std::string before = slurp(newer);
  expect_usage_error(quick_run_args() + " --db " + newer.string(), "newer");
  expect_usage_error("export --db " + newer.string(), "newer");
  EXPECT_EQ(slurp(newer), before);
}

TEST_F(Cli, SigkillMidRunLeavesEarlierRunsIntact) {
  ASSERT_EQ(plumb(quick_run_args() + " --db " + db()).code, 0);
  ASSERT_EQ(plumb(quick_run_args() + " --mode infer --db " + db()).code, 0);

  // A long run, killed while it measures.
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const std::string out = (dir_ / "long.err").string();
    freopen(out.c_str(), "w", stderr);
    freopen("/dev/null", "w", stdout);
    execl(PLUMB_BINARY, PLUMB_BINARY, "run", "autoenc", "--batch", "64", "--max-time", "120",
          "--target-ci", "0.0001", "--db", db().c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // Wait until it reports the end of warm-up, i.e. it is measuring, then kill it hard.
  for (int i = 0; i < 600 && slurp(dir_ / "long.err").find("warm-up:") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_EQ(kill(child, SIGKILL), 0);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));

  auto store = store::ResultsStore::open(db(), /*read_only=*/true);
  auto runs = store->load_runs(/*with_samples=*/true);
  ASSERT_EQ(runs.size(), 2u) << "the killed run must leave no partial record";
  for (const auto& r : runs) {
    EXPECT_EQ(r.result.status, run::RunStatus::kOk);
    EXPECT_EQ(r.result.samples_s.size(), r.result.step_time.n);
  }
  // And the database still accepts new runs.
  EXPECT_EQ(plumb(quick_run_args() + " --db " + db()).code, 0);
}

TEST_F(Cli, ExportCsvAndJson) {
  ASSERT_EQ(plumb(quick_run_args() + " --db " + db()).code, 0);
  Result json = plumb("export --db " + db() + " --format json");
  ASSERT_EQ(json.code, 0) << json.err;
  auto j = nlohmann::json::parse(json.out);
  ASSERT_EQ(j["runs"].size(), 1u);
  EXPECT_FALSE(j["runs"][0]["samples"].empty());
  Result csv = plumb("export --db " + db() + " --format csv --table samples");
  ASSERT_EQ(csv.code, 0) << csv.err;
  EXPECT_EQ(csv.out.rfind("run_id,phase,index,seconds\n", 0), 0u) << csv.out.substr(0, 80);
  expect_usage_error("export --db " + (dir_ / "none.db").string(), "none.db");
}

TEST_F(Cli, ProfileJsonHasBreakdownCoverageAndScaling) {
  auto j = plumb_json(quick_profile_args() + " --threads 1,2 --steps 2 --max-warmup-time 3");
  ASSERT_EQ(j["passes"].size(), 4u);  // 2 modes x 2 thread counts
  for (const auto& pass : j["passes"]) {
    EXPECT_EQ(pass["status"], "ok");
    EXPECT_GE(pass["ops_for_90_percent"].get<int>(), 1);
    double share = pass["overhead_s"].get<double>() / pass["step_s"].get<double>();
    for (const auto& row : pass["rows"]) {
      for (const char* k : {"name", "time_s", "time_share", "calls", "flops", "bytes"})
        EXPECT_TRUE(row.contains(k)) << k;
      share += row["time_share"].get<double>();
    }
    EXPECT_NEAR(share, 1.0, 1e-6);  // categories + framework overhead = the step
    // autoenc's batches share shapes: both kept steps replay what the learning step met.
    EXPECT_EQ(pass["replayed_steps"], 2) << pass.dump();
    EXPECT_GT(pass["learning_step_s"].get<double>(), 0);
  }
  EXPECT_TRUE(j["scaling"].contains("train"));
  EXPECT_EQ(j["scaling"]["train"][0]["name"], "step");
  EXPECT_TRUE(j.contains("train_vs_infer"));
  auto store = store::ResultsStore::open(db(), /*read_only=*/true);
  EXPECT_EQ(store->load_profiles().size(), 4u);
}

TEST_F(Cli, ProfileByLayerNamesModelLayers) {
  auto j = plumb_json(
      "profile seq2seq --mode infer --by layer --batch 2 --set source_vocab=60 "
      "--set target_vocab=50 --set embedding=8 --set hidden=8 --set source_len=4 "
      "--set target_len=4 --steps 1 --max-warmup-time 2");
  std::set<std::string> names;
  for (const auto& row : j["passes"][0]["rows"]) names.insert(row["name"].get<std::string>());
  for (const char* layer : {"encoder_lstm.0", "decoder_lstm.2", "attention", "projection"})
    EXPECT_TRUE(names.count(layer)) << layer;
}

TEST_F(Cli, ProfileBadArguments) {
  expect_usage_error("profile autoenc --by module --db " + db(), "valid: op, category, layer");
  expect_usage_error("profile autoenc --threads 0,1 --db " + db(), "positive");
  expect_usage_error("profile autoenc --threads 1,1 --db " + db(), "twice");
  expect_usage_error("profile autoenc --threads 1,,2 --db " + db(), "empty item");
  expect_usage_error("profile autoenc --steps 0 --db " + db(), "--steps");
  EXPECT_FALSE(fs::exists(db()));
}

// The one identity printer's round trip for run, profile, memory and precision: each stored
// reproducer, run again, stores the same command line and lands on the same canonical key, engine
// and heap included (stored_identity.h).
TEST_F(Cli, EveryReproducerLandsOnTheKeyOfTheRecordItReproduces) {
  const std::string setting =
      " autoenc --mode infer --batch 8 --set hidden=16 --set latent=4 --threads 1 --engine native "
      "--heap return --seed 3";
  const std::vector<std::pair<std::string, std::string>> commands = {
      {"run", "run" + setting +
                  " --max-time 0.3 --min-samples 3 --target-ci 0.5 "
                  "--max-warmup-time 0.3"},
      {"profile", "profile" + setting + " --steps 1 --max-warmup-time 0.3"},
      {"memory", "memory" + setting + " --warmup-steps 1"}};
  for (const auto& [kind, args] : commands) {
    const std::string first = (dir_ / (kind + ".db")).string();
    const Result r = plumb(args + " --db " + first);
    ASSERT_EQ(r.code, 0) << args << ": " << r.err;
    const auto original = testing::newest_stored_identity(first, kind);
    EXPECT_NE(original.command.find("--engine native --heap return --seed 3"), std::string::npos)
        << original.command;
    EXPECT_NE(original.key.find("engine=native heap=return"), std::string::npos) << original.key;
    testing::expect_reproducer_round_trip([this](const std::string& a) { return plumb(a); }, first,
                                          (dir_ / (kind + "-again.db")).string(), kind);
  }
  // int8's own options, and the runs plumb precision stores (their reproducer is plumb run's).
  const std::string tiny =
      " autoenc --batch 8 --set hidden=16 --set latent=4 --threads 1 --max-time 0.3 "
      "--min-samples 3 --target-ci 0.5 --max-warmup-time 0.3";
  for (const std::string& args : {"run" + tiny + " --mode infer --dtype int8 --embedding-bits 4",
                                  "precision" + tiny + " --dtypes int8"}) {
    const std::string first = (dir_ / "int8.db").string(),
                      again = (dir_ / "int8-again.db").string();
    fs::remove(first);
    fs::remove(again);
    const Result r = plumb(args + " --db " + first);
    ASSERT_EQ(r.code, 0) << args << ": " << r.err;
    testing::expect_reproducer_round_trip([this](const std::string& a) { return plumb(a); }, first,
                                          again, "run");
  }
  EXPECT_NE(testing::newest_stored_identity((dir_ / "int8.db").string(), "run")
                .command.find("--dtype int8"),
            std::string::npos);
}

}  // namespace
}  // namespace plumb
