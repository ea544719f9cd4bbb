// End-to-end tests of the platform commands: plumb probe (every dtype and memory level
// reported, unsupported dtypes stated, stored and reused, nothing stored when interrupted),
// plumb roofline (every layer placed with a bound), plumb info --intensity and plumb project.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli_fixture.h"
#include "plumb/store/probe_record.h"
#include "plumb/store/results_store.h"
#include "plumb/store/run_record.h"

namespace plumb {
namespace {

using testing::Cli;
using testing::Result;
using testing::slurp;

// A quick probe on one thread: the cheapest real probe (a few seconds).
constexpr const char* kQuickProbe = "probe --quick --threads 1 --json --db ";

TEST_F(Cli, ProbeReportsEveryDtypeAndLevelAndIsReused) {
  Result r = plumb(kQuickProbe + db());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_FALSE(j["reused"].get<bool>());
  EXPECT_EQ(j["mode"], "quick");
  for (const char* dtype : {"fp32", "fp64", "bf16", "fp16", "int8"}) {
    ASSERT_TRUE(j["peaks"].contains(dtype)) << dtype;
    const auto& p = j["peaks"][dtype];
    if (p["supported"].get<bool>()) {
      EXPECT_GT(p["instruction_flops"].get<double>(), 0) << dtype;
      EXPECT_EQ(p["by_threads"][0]["threads"], 1) << dtype;
    } else {
      // Unsupported is stated with its reason, never a number.
      EXPECT_FALSE(p["reason"].get<std::string>().empty()) << dtype;
      EXPECT_EQ(p["instruction_flops"].get<double>(), 0) << dtype;
      EXPECT_TRUE(p["by_threads"].empty()) << dtype;
    }
  }
  // Every engine's measured peak is explained where it passes its theory, a library GEMM
  // above the roof is flagged, and bf16 and int8 list the matrix engine (AMX) measured or
  // refused with the reason.
  for (const auto& [dtype, p] : j["peaks"].items()) {
    ASSERT_TRUE(p.contains("engines")) << dtype;
    for (const auto& e : p["engines"]) {
      if (!e["supported"].get<bool>()) {
        EXPECT_FALSE(e["reason"].get<std::string>().empty()) << dtype;
        continue;
      }
      ASSERT_TRUE(e["theory"].is_object()) << dtype;
      // Every sequence timed for the engine is listed; the engine's peak is the fastest.
      double fastest = 0;
      bool own = false;
      for (const auto& q : e["sequences"]) {
        fastest = std::max(fastest, q["instruction_flops"].get<double>());
        own = own || q["isa"] == e["isa"];
      }
      EXPECT_TRUE(own) << dtype << " " << e["isa"];
      EXPECT_DOUBLE_EQ(fastest, e["instruction_flops"].get<double>()) << dtype;
      for (const auto& row : e["by_threads"]) {
        if (!row["fraction_of_theoretical"].is_number()) continue;
        if (row["fraction_of_theoretical"].get<double>() > 1.05) {
          EXPECT_FALSE(e["theory"]["note"].get<std::string>().empty())
              << dtype << " above theory without an explanation";
        }
      }
      if (!e["theory"]["agrees_with_table"].get<bool>()) {
        EXPECT_FALSE(e["theory"]["note"].get<std::string>().empty()) << dtype;
      }
    }
    if (p["gemm_above_roof"].get<bool>()) {
      EXPECT_FALSE(p["gemm_note"].get<std::string>().empty()) << dtype;
    }
    if (dtype == "bf16" || dtype == "int8") {
      std::set<std::string> engines;
      for (const auto& e : p["engines"]) engines.insert(e["engine"].get<std::string>());
      EXPECT_EQ(engines, (std::set<std::string>{"vector", "matrix"})) << dtype;
    }
  }
  // fp32 runs everywhere plumb builds: an instruction peak and a library GEMM.
  ASSERT_TRUE(j["peaks"]["fp32"]["supported"].get<bool>());
  EXPECT_GT(j["peaks"]["fp32"]["instruction_flops"].get<double>(), 0);
  EXPECT_GT(j["peaks"]["fp32"]["gemm_flops"].get<double>(), 0);
  EXPECT_GT(j["peaks"]["fp64"]["gemm_flops"].get<double>(), 0);  // OpenBLAS dgemm everywhere
  EXPECT_FALSE(j["peaks"]["fp32"]["gemm_library"].get<std::string>().empty());
  // The hierarchy needs cache sizes: sysfs lists them, or cpuid does where a VM hides sysfs's.
  ASSERT_FALSE(j["machine"]["caches"].empty());
  EXPECT_TRUE(j["machine"]["cache_source"] == "sysfs" ||
              j["machine"]["cache_source"] == "cpuid (glibc sysconf)");
  std::set<std::string> levels;
  for (const auto& l : j["bandwidth"]["levels"]) {
    levels.insert(l["level"].get<std::string>());
    EXPECT_GT(l["triad"].get<double>(), 0);
    EXPECT_EQ(l["threads"], 1);
  }
  EXPECT_TRUE(levels.count("l1") && levels.count("dram")) << r.out.substr(0, 400);
  EXPECT_GT(j["bandwidth"]["dram"]["triad"].get<double>(), 0);
  // Cache bandwidth exceeds DRAM bandwidth: the probe measured a hierarchy, not noise.
  EXPECT_GT(j["bandwidth"]["l1"]["read"].get<double>(),
            j["bandwidth"]["dram"]["read"].get<double>());

  // No GPU in CI: said so, with the reason; with one, a GEMM peak and a bandwidth.
  if (j["gpu"]["available"].get<bool>()) {
    EXPECT_GT(j["gpu"]["peaks"]["fp32"]["gemm_flops"].get<double>(), 0);
    EXPECT_GT(j["gpu"]["bandwidth"]["copy"].get<double>(), 0);
  } else {
    EXPECT_FALSE(j["gpu"]["reason"].get<std::string>().empty());
  }

  Result again = plumb(kQuickProbe + db());
  ASSERT_EQ(again.code, 0) << again.err;
  const auto k = nlohmann::json::parse(again.out);
  EXPECT_TRUE(k["reused"].get<bool>());
  EXPECT_EQ(k["probe_id"], j["probe_id"]);
  EXPECT_EQ(k["peaks"]["fp32"]["instruction_flops"], j["peaks"]["fp32"]["instruction_flops"]);
  auto store = store::ResultsStore::open(db(), /*read_only=*/true);
  EXPECT_EQ(store->load_probes().size(), 1u);
}

TEST_F(Cli, InterruptedProbeStoresNothing) {
  ASSERT_EQ(plumb(quick_run_args() + " --db " + db()).code, 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const std::string err = (dir_ / "probe.err").string();
    freopen(err.c_str(), "w", stderr);
    freopen("/dev/null", "w", stdout);
    execl(PLUMB_BINARY, PLUMB_BINARY, "probe", "--thorough", "--db", db().c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  // Kill it once it is measuring (its first long phase: the thorough GEMM peaks).
  for (int i = 0; i < 300 && slurp(dir_ / "probe.err").find("GEMM peaks") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_EQ(kill(child, SIGINT), 0);
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_FALSE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  auto store = store::ResultsStore::open(db(), /*read_only=*/true);
  EXPECT_TRUE(store->load_probes().empty()) << "an interrupted probe must store nothing";
  EXPECT_EQ(store->load_runs(false).size(), 1u);
}

TEST_F(Cli, ProbeBadArguments) {
  expect_usage_error("probe --quick --thorough --db " + db(), "exclude");
  expect_usage_error("probe --threads -1 --db " + db(), "--threads");
}

TEST_F(Cli, RooflinePlacesEveryLayerWithABound) {
  ASSERT_EQ(plumb(kQuickProbe + db()).code, 0);
  const auto j = plumb_json(
      "roofline resnet50 --mode infer --by layer --batch 1 --set image_size=64 --threads 1 "
      "--steps 1 --max-warmup-time 2");
  EXPECT_GT(j["ceilings"]["peak_flops"].get<double>(), 0);
  EXPECT_FALSE(j["ceilings"]["memory"].empty());
  std::set<std::string> names;
  for (const auto& row : j["rows"]) {
    names.insert(row["name"].get<std::string>());
    const std::string bound = row["bound"];
    EXPECT_TRUE(bound == "compute" || bound == "overhead" || bound.rfind("memory:", 0) == 0)
        << row.dump();
    for (const char* k : {"flops", "bytes", "intensity", "achieved_flops", "roof_flops", "level",
                          "roof_fraction", "utilisation", "roofs"})
      EXPECT_TRUE(row.contains(k)) << k;
  }
  for (const char* layer : {"conv1", "layer1.0.conv1", "layer1.0.conv2", "layer4.2.conv3", "fc"})
    EXPECT_TRUE(names.count(layer)) << layer;
  EXPECT_GT(j["step"]["utilisation"].get<double>(), 0);
  expect_usage_error("roofline resnet50 --by category --db " + db(), "op or layer");
  expect_usage_error("roofline resnet50 --peak vector --db " + db(), "instruction or gemm");
}

// The detection models label their layers as torchvision does ("backbone.conv1") while their
// modules are registered under other paths, and their trunk's first convolution is frozen: the
// weights each layer reads are still its own (matched by the tensors the layer reads), frozen
// ones included, so no layer with compute is left out.
TEST_F(Cli, InfoIntensityCountsWeightsOfLayersLabelledApartFromTheirModules) {
  Result r = plumb(
      "info faster_rcnn_shufflenet --intensity --json --set image_height=128 --set "
      "image_width=128");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out)["intensity"];
  EXPECT_TRUE(j["unmatched_layers"].empty()) << j["unmatched_layers"];
  EXPECT_GT(j["model_ops_per_weight"].get<double>(), 0);
  bool found = false;
  for (const auto& l : j["layers"])
    if (l["name"] == "backbone.conv1") {
      found = true;
      EXPECT_DOUBLE_EQ(l["parameters"].get<double>(), 24.0 * 3 * 3 * 3);  // frozen, counted
    }
  EXPECT_TRUE(found);
}

TEST_F(Cli, InfoIntensityAndProjectionOfResnet50) {
  Result r = plumb("info resnet50 --intensity --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out)["intensity"];
  EXPECT_EQ(j["batch"], 1);
  // conv1 at batch 1 by hand: 2 x 64 x 3 x 7 x 7 x 112 x 112 = 236,027,904 ops over
  // 64 x 3 x 7 x 7 = 9,408 weights; activations 3 x 224 x 224 in + 64 x 112 x 112 out.
  bool found = false;
  for (const auto& l : j["layers"])
    if (l["name"] == "conv1") {
      found = true;
      EXPECT_DOUBLE_EQ(l["ops"].get<double>(), 236027904.0);
      EXPECT_DOUBLE_EQ(l["parameters"].get<double>(), 9408.0);
      EXPECT_DOUBLE_EQ(l["activation_elements"].get<double>(), 150528.0 + 802816.0);
      EXPECT_DOUBLE_EQ(l["ops_per_weight"].get<double>(), 236027904.0 / 9408.0);
    }
  EXPECT_TRUE(found);
  EXPECT_EQ(j["layers"].size(), 54u);  // 53 convolutions + the FC, BN/ReLU/pool fused
  EXPECT_TRUE(j["unmatched_layers"].empty());

  Result p = plumb("project resnet50 --onchip-mb 0,64 --onchip-gbs 1000 --json");
  ASSERT_EQ(p.code, 0) << p.err;
  const auto k = nlohmann::json::parse(p.out);
  ASSERT_EQ(k["points"].size(), 2u);
  // With no on-chip memory every weight streams from DRAM; 64 MB holds all 25.5 M int8
  // weights, so the projection must be faster.
  EXPECT_GT(k["points"][0]["time_s"].get<double>(), k["points"][1]["time_s"].get<double>());
  EXPECT_NEAR(k["points"][1]["onchip_weight_bytes"].get<double>(), 25.5e6, 0.1e6);
  expect_usage_error("project resnet50 --onchip-gbs 0", "--onchip-gbs");
  expect_usage_error("project resnet50 --peak-tops -1", "positive");
}

}  // namespace
}  // namespace plumb
