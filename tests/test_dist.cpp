// Data-parallel training (plumb dist): the worker protocol reads back what it wrote; two workers on
// halves of a batch end with the same parameters as one worker on the whole batch; a worker killed
// mid-run stops the others with a clear error; bad input is refused before any worker starts. Over
// Gloo on the CPU (every machine), and over NCCL on a GPU where there is one (a CUDA build on a GPU
// machine).
#ifdef PLUMB_WITH_DIST
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "cli_fixture.h"
#include "plumb/core/json_text.h"
#include "plumb/jobs/dist_protocol.h"
#include "plumb/run/gradient_buckets.h"
#include "plumb/run/process_group.h"
#include "plumb/store/dist_record.h"
#include "plumb/store/results_store.h"
#include "plumb/workloads/all_workloads.h"
#include "scoped_env.h"

namespace plumb {
namespace {

namespace fs = std::filesystem;

// paradnn_fc (4 layers of 32 nodes, plain SGD; cross-entropy averaged over the batch) at
// batch `batch`, built with seed 7 on `device`.
[[maybe_unused]] std::unique_ptr<Model> fc_model(int64_t batch,
                                                 torch::Device device = torch::kCPU) {
  const Workload& w = workloads::default_registry().get("paradnn_fc");
  Config c = w.default_config();
  c.apply_settings({"layers=4", "nodes=32", "input=24", "output=10", "optimizer=sgd", "lr=0.05",
                    "batch=" + std::to_string(batch)});
  torch::manual_seed(7);
  auto model = w.build(c, device);
  model->module().train();
  return model;
}

[[maybe_unused]] Batch rows(const Batch& b, int64_t start, int64_t count) {
  Batch out;
  for (const auto& t : b.tensors) out.tensors.push_back(t.narrow(0, start, count).contiguous());
  out.units = static_cast<double>(count);
  return out;
}

using testing::Cli;

// The worker protocol: what a worker writes is what the launcher reads back, field for field
// (the JSON of the read-back result is the JSON that was written, after a trip through text).
TEST(DistProtocol, AWorkerResultReadsBackAsItWasWritten) {
  jobs::DistWorkerResult r;
  r.device = "cpu";
  r.backend = "gloo";
  r.batch_per_worker = 8;
  run::DataParallelResult& t = r.training;
  t.status = run::RunStatus::kNanLoss;
  t.message = "loss became NaN at step 3";
  t.workers = 2;
  t.step_s = {0.25, 0.125};
  t.backward_s = {0.1, 0.05};
  t.exposed_s = {1e-7, 0};
  t.busy_s = {0.01, 0.02};
  t.buckets = 3;
  t.gradient_bytes = 104416;
  t.units_per_step = 16;
  t.throughput_unit = "images/s";
  t.peak_rss_bytes = 1 << 27;
  t.peak_device_bytes = 0;
  t.sample_buckets = {{3136, 4e-6, 1.5e-5}, {50176, 2.3e-5, 2.8e-5}};
  t.ranks = {{0, 0.1875, 5e-8, 0.015}, {1, 0.125, 0, 0.0125}};
  t.notes = {"a note"};
  r.allreduce = {{1024, 100, 1e-3, 1.0e6, 1.0e6}};
  const std::string written = json_text(jobs::dist_worker_json(r));
  const auto back = jobs::dist_worker_from_json(nlohmann::ordered_json::parse(written));
  EXPECT_EQ(json_text(jobs::dist_worker_json(back)), written);
  EXPECT_EQ(back.training.status, run::RunStatus::kNanLoss);
  EXPECT_EQ(back.training.sample_buckets.size(), 2u);
  ASSERT_EQ(back.training.ranks.size(), 2u);
  EXPECT_EQ(back.training.ranks[1].rank, 1);
  EXPECT_DOUBLE_EQ(back.training.ranks[0].exposed_s, 5e-8);
  EXPECT_EQ(back.allreduce.at(0).repetitions, 100);
  // A world stored before the per-rank split reads back without one.
  auto old = nlohmann::ordered_json::parse(written);
  old.erase("ranks");
  EXPECT_TRUE(jobs::dist_worker_from_json(old).training.ranks.empty());
}

TEST(DistProtocol, ARanksSplitIsComputeExposedAndOverlapped) {
  const run::RankSplit k{1, 0.5, 0.1, 0.25};
  EXPECT_DOUBLE_EQ(k.compute_s(), 0.4);
  EXPECT_DOUBLE_EQ(k.overlapped_s(), 0.15);  // in flight 0.25, of which 0.1 waited for
  EXPECT_DOUBLE_EQ((run::RankSplit{0, 0.5, 0.1, 0.05}).overlapped_s(), 0);
}

#ifdef PLUMB_WITH_GLOO
TEST(DataParallel, TwoWorkersOnHalvesMatchOneWorkerOnTheWholeBatch) {
  torch::set_num_threads(1);
  constexpr int64_t kHalf = 8;
  constexpr int kSteps = 5;
  // The whole batches, one per step, and the single-worker reference trained on them.
  auto reference = fc_model(2 * kHalf);
  std::vector<Batch> whole;
  torch::manual_seed(11);
  for (int i = 0; i < kSteps; ++i) whole.push_back(reference->make_batch());
  for (const auto& b : whole) reference->train_step(b);

  // Two workers in threads of this process, each on its half of every batch, over the real
  // rendezvous and Gloo path; small buckets, so that several overlap backward.
  // Built here, one after the other: fc_model seeds LibTorch's global generator, which two
  // threads building at once would interleave (rank 0 would then not start from the
  // reference's weights).
  std::vector<std::unique_ptr<Model>> models;
  for (int rank = 0; rank < 2; ++rank) models.push_back(fc_model(kHalf));
  // Rank 1 starts from other weights: the broadcast must replace them with rank 0's.
  {
    torch::NoGradGuard no_grad;
    for (auto& p : models[1]->module().parameters()) p.add_(1.0);
  }
  std::vector<std::string> errors(2);
  const int port = run::free_loopback_port();
  std::vector<std::thread> workers;
  for (int rank = 0; rank < 2; ++rank)
    workers.emplace_back([&, rank] {
      try {
        run::WorldInfo world;
        world.rank = rank;
        world.size = 2;
        world.master_port = port;
        const auto group = run::join_process_group(world, std::chrono::seconds(60));
        run::GradientReducer reducer(models[rank]->module(), group, /*bucket_bytes=*/4096,
                                     /*overlap=*/true);
        reducer.broadcast_state();
        EXPECT_GT(reducer.bucket_count(), 1u);
        for (const auto& b : whole) models[rank]->train_step(rows(b, rank * kHalf, kHalf));
        EXPECT_EQ(reducer.last_step().buckets.size(), reducer.bucket_count());
        EXPECT_GE(reducer.last_step().exposed_s, 0.0);
      } catch (const std::exception& e) {
        errors[rank] = e.what();
      }
    });
  for (auto& t : workers) t.join();
  ASSERT_EQ(errors[0], "");
  ASSERT_EQ(errors[1], "");
  const auto expected = reference->module().parameters();
  for (int rank = 0; rank < 2; ++rank) {
    const auto got = models[rank]->module().parameters();
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
      // Averaging two half-batch gradients sums in another order than one whole-batch
      // gradient: equal up to fp32 rounding.
      EXPECT_TRUE(torch::allclose(got[i], expected[i], 1e-4, 1e-5))
          << "rank " << rank << " parameter " << i << " differs by "
          << (got[i] - expected[i]).abs().max().item<double>();
      // And training moved them: the check is not vacuous.
    }
  }
  EXPECT_FALSE(torch::allclose(expected[0], fc_model(2 * kHalf)->module().parameters()[0]));
}

TEST_F(Cli, DistReportsScalingForOneAndTwoWorkers) {
  const auto doc = plumb_json(
      "dist autoenc --workers 2,1 --batch-per-worker 8 --steps 4 --warmup-steps 1 --bucket-mb 0.01 "
      "--set hidden=16 --set latent=4");
  ASSERT_EQ(doc.at("worlds").size(), 2u);
  const auto& one = doc["worlds"][0];
  const auto& two = doc["worlds"][1];
  EXPECT_EQ(one.at("workers"), 1);
  EXPECT_EQ(two.at("workers"), 2);
  for (const auto* w : {&one, &two}) {
    EXPECT_EQ(w->at("status"), "ok") << w->at("message");
    EXPECT_EQ(w->at("step_s").size(), 4u);
    EXPECT_GT(w->at("throughput").get<double>(), 0);
    EXPECT_GT(w->at("peak_rss_bytes").get<double>(), 0);
    const auto& split = w->at("split");
    EXPECT_NEAR(
        split.at("compute_s").get<double>() + split.at("exposed_communication_s").get<double>(),
        w->at("step").at("mean_s").get<double>(), 1e-9);
    // Each worker's own means: no rank's step is longer than the slowest worker's, step by
    // step, so its mean is not above the world's.
    const auto& ranks = w->at("ranks");
    ASSERT_EQ(ranks.size(), w->at("workers").get<size_t>());
    for (size_t r = 0; r < ranks.size(); ++r) {
      EXPECT_EQ(ranks[r].at("rank").get<size_t>(), r);
      EXPECT_GT(ranks[r].at("step_s").get<double>(), 0);
      EXPECT_LE(ranks[r].at("step_s").get<double>(),
                w->at("step").at("mean_s").get<double>() * (1 + 1e-12));
      EXPECT_GE(ranks[r].at("exposed_s").get<double>(), 0);
      EXPECT_GE(ranks[r].at("busy_s").get<double>(), 0);
    }
  }
  // One worker: its own step is the world's.
  EXPECT_DOUBLE_EQ(one.at("ranks")[0].at("step_s").get<double>(),
                   one.at("step").at("mean_s").get<double>());
  // One worker sends nothing; two send 2(n-1)/n = 1x the gradient bytes each.
  EXPECT_EQ(one.at("bytes_sent_per_worker_per_step"), 0.0);
  EXPECT_EQ(two.at("bytes_sent_per_worker_per_step"), two.at("gradient_bytes"));
  EXPECT_GT(two.at("buckets").get<int>(), 1);  // 10 KiB buckets of this autoenc's 100 KB
  EXPECT_TRUE(two.contains("efficiency"));
  EXPECT_DOUBLE_EQ(two["units_per_step"].get<double>(), 2 * one["units_per_step"].get<double>());
  // Stored as two worlds, the efficiency against the one-worker world with it.
  const auto stored = store::ResultsStore::open(db(), /*read_only=*/true)->load_dist_worlds();
  ASSERT_EQ(stored.size(), 2u);
  EXPECT_EQ(stored[0].workers, 1);
  EXPECT_EQ(stored[1].workers, 2);
  EXPECT_EQ(stored[1].batch_per_worker, 8);
  EXPECT_DOUBLE_EQ(stored[1].throughput, two.at("throughput").get<double>());
  EXPECT_DOUBLE_EQ(stored[1].efficiency, two.at("efficiency").at("value").get<double>());
  EXPECT_TRUE(std::isnan(stored[0].efficiency) || stored[0].efficiency > 0);
  EXPECT_EQ(stored[1].document.at("step_s").size(), 4u);
}

TEST_F(Cli, DistKilledWorkerStopsTheOthersWithAClearError) {
  const std::string err = (dir_ / "err").string();
  const std::string pidfile = (dir_ / "pid").string();
  std::system((std::string(PLUMB_BINARY) +
               " dist autoenc --workers 2 --steps 100000 --warmup-steps 0 --set hidden=16 --set "
               "latent=4 --batch-per-worker 8 --timeout 300 --db " +
               db() + " >/dev/null 2>" + err + " & echo $! > " + pidfile)
                  .c_str());
  std::string parent = testing::slurp(pidfile);
  parent.erase(parent.find_last_not_of(" \n") + 1);
  // Wait until both workers run (the parent's children, from /proc: no procps needed), then
  // kill one of them.
  const auto children_of = [](const std::string& pid) {
    std::vector<std::string> out;
    for (const auto& entry : fs::directory_iterator("/proc")) {
      const std::string name = entry.path().filename();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      std::ifstream stat(entry.path() / "stat");
      std::string line;
      if (!std::getline(stat, line) || line.rfind(')') == std::string::npos) continue;
      std::istringstream rest(line.substr(line.rfind(')') + 2));  // after "pid (comm) "
      std::string state, ppid;
      rest >> state >> ppid;
      if (ppid == pid && state != "Z") out.push_back(name);
    }
    return out;
  };
  // Gone: no such process, or an exited one that nobody reaped yet (a zombie may stay in a
  // container without an init that reaps it).
  const auto gone = [](const std::string& pid) {
    std::ifstream stat("/proc/" + pid + "/stat");
    std::string line;
    if (!std::getline(stat, line) || line.rfind(')') == std::string::npos) return true;
    return line[line.rfind(')') + 2] == 'Z';
  };
  std::vector<std::string> children;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline && children.size() != 2) {
    children = children_of(parent);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(children.size(), 2u) << testing::slurp(err);
  std::this_thread::sleep_for(std::chrono::seconds(3));  // inside the training loop
  const auto killed_at = std::chrono::steady_clock::now();
  ::kill(std::stoi(children.back()), SIGKILL);
  // The launcher stops the other worker and exits with the reason, well before --timeout.
  std::string e;
  while (std::chrono::steady_clock::now() - killed_at < std::chrono::seconds(60)) {
    e = testing::slurp(err);
    if (e.find("were stopped") != std::string::npos && gone(parent)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count();
  EXPECT_LT(seconds, 30.0) << e;
  EXPECT_TRUE(gone(parent));
  EXPECT_NE(e.find("was killed by signal 9"), std::string::npos) << e;
  EXPECT_NE(e.find("the other workers were stopped"), std::string::npos) << e;
  // Nothing of the killed world was stored (the database holds no world at all).
  EXPECT_TRUE(store::ResultsStore::open(db())->load_dist_worlds().empty());
}

// --link: the workers run in a namespace of plumb's own whose loopback is shaped; it is gone
// afterwards. Without root it is refused with the reason.
TEST_F(Cli, DistOverAShapedLinkRemovesItsNamespace) {
  const std::string args =
      "dist autoenc --workers 2 --link 200mbit --batch-per-worker 8 --steps 3 --warmup-steps 1 "
      "--set hidden=16 --set latent=4 --json --db " +
      db();
  if (geteuid() != 0) {
    expect_usage_error(args, "needs root");
    GTEST_SKIP() << "needs root for the shaped run (without it --link is refused: checked)";
  }
  if (std::system("ip netns add plumb-test-probe >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "needs network namespaces (ip netns add failed here)";
  std::system("ip netns delete plumb-test-probe >/dev/null 2>&1");
  const auto r = plumb(args);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  ASSERT_EQ(doc.at("worlds").size(), 1u);
  EXPECT_EQ(doc["worlds"][0].at("link"), "200mbit");
  EXPECT_EQ(doc["worlds"][0].at("status"), "ok");
  const auto stored = store::ResultsStore::open(db(), /*read_only=*/true)->load_dist_worlds();
  ASSERT_EQ(stored.size(), 1u);
  EXPECT_EQ(stored[0].link, "200mbit");
  FILE* p = popen("ip netns list", "r");
  std::string namespaces;
  char line[256];
  while (fgets(line, sizeof line, p) != nullptr) namespaces += line;
  pclose(p);
  EXPECT_EQ(namespaces.find("plumb-"), std::string::npos) << namespaces;
}

// A worker of a torchrun-style world (the variables set) whose rank 0 never comes: one line,
// exit 1, after --timeout. Rank 0 whose port is taken: a usage error naming MASTER_PORT.
TEST_F(Cli, DistRendezvousFailuresAreOneLine) {
  const int port = run::free_loopback_port();
  // Restored on any exit: a world left in the environment would make every later plumb a worker.
  testing::ScopedEnv world;
  world.set("MASTER_ADDR", "127.0.0.1")
      .set("MASTER_PORT", std::to_string(port))
      .set("WORLD_SIZE", "2")
      .set("RANK", "1");
  const auto start = std::chrono::steady_clock::now();
  const auto lonely = plumb("dist autoenc --timeout 2 --set hidden=16 --set latent=4 --db " + db());
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(lonely.code, 1) << lonely.err;
  EXPECT_NE(
      lonely.err.find("rendezvous with 127.0.0.1:" + std::to_string(port) + " failed within 2 s"),
      std::string::npos)
      << lonely.err;
  EXPECT_LT(waited, 60.0);
  // A listening socket holds the port rank 0 would serve the rendezvous on.
  const int holder = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  ASSERT_EQ(::bind(holder, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(holder, 1), 0);
  world.set("RANK", "0");
  const auto taken = plumb("dist autoenc --timeout 2 --set hidden=16 --set latent=4 --db " + db());
  ::close(holder);
  EXPECT_EQ(taken.code, 2) << taken.err;
  EXPECT_NE(taken.err.find("the port is in use; set MASTER_PORT"), std::string::npos) << taken.err;
}

// How many of a world's workers share this machine (each gets that share of the memory cap):
// all of them under plumb's launcher, torchrun's LOCAL_WORLD_SIZE, Slurm's plain per-node count.
TEST(DataParallel, WorkersOnThisMachineAreCounted) {
  // Restored on any exit: a world left in the environment would make every later plumb a worker.
  testing::ScopedEnv world;
  for (const char* v :
       {"RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "PLUMB_DIST_LAUNCHER", "SLURM_PROCID",
        "SLURM_NTASKS", "SLURM_NTASKS_PER_NODE", "MASTER_ADDR", "MASTER_PORT"})
    world.unset(v);  // from no world, whatever the job running the tests set
  const auto local_size = [] { return run::world_from_environment().value().local_size; };
  world.set("MASTER_ADDR", "127.0.0.1")
      .set("MASTER_PORT", "29500")
      .set("RANK", "1")
      .set("WORLD_SIZE", "3")
      .set("PLUMB_DIST_LAUNCHER", "1");
  EXPECT_EQ(local_size(), 3);
  world.unset("PLUMB_DIST_LAUNCHER");
  EXPECT_EQ(local_size(), 1) << "torchrun without LOCAL_WORLD_SIZE: not known, no share taken";
  world.set("LOCAL_WORLD_SIZE", "2");
  EXPECT_EQ(local_size(), 2);
  world.unset("RANK").unset("WORLD_SIZE").unset("LOCAL_WORLD_SIZE");
  world.set("SLURM_PROCID", "5").set("SLURM_NTASKS", "8").set("SLURM_NTASKS_PER_NODE", "4");
  EXPECT_EQ(local_size(), 4);
  world.set("SLURM_NTASKS_PER_NODE", "4(x2)");
  EXPECT_EQ(local_size(), 1);
  for (const char* v :
       {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_NTASKS_PER_NODE", "MASTER_ADDR", "MASTER_PORT"})
    world.unset(v);
  EXPECT_FALSE(run::world_from_environment().has_value());
}

TEST_F(Cli, DistBadInputIsAUsageError) {
  expect_usage_error("dist autoenc --workers 1 --link fast", "not a rate");
  expect_usage_error("dist autoenc --workers 0", "--workers");
  expect_usage_error("dist autoenc --workers 4096", "oversubscribed");
  expect_usage_error("dist a3c --workers 1", "Hogwild");
  expect_usage_error("dist wgan_gp --workers 1", "alternates");
  expect_usage_error("dist autoenc", "--workers 1,2");
  expect_usage_error("dist autoenc --workers 1 --set nosuch=1", "nosuch");
  expect_usage_error("dist dlrm --workers 1 --set preset=small", "sparse gradients");
}
#endif  // PLUMB_WITH_GLOO

// GPU workers: one GPU each, refused before anything starts when there are not enough (here:
// none on a CPU machine, one more than there are on a GPU machine), and no shaped link.
TEST_F(Cli, DistOnGpusNeedsAGpuPerWorker) {
  expect_usage_error("dist autoenc --workers 1 --device tpu", "--device");
  if (!torch::cuda::is_available()) {
    expect_usage_error("dist autoenc --workers 1 --device cuda", "no CUDA GPU is visible");
    return;
  }
  const int gpus = static_cast<int>(torch::cuda::device_count());
  expect_usage_error(fmt::format("dist autoenc --workers {} --device cuda", gpus + 1),
                     "NCCL runs one worker per GPU");
  expect_usage_error("dist autoenc --workers 1 --device cuda --link 1gbit", "tc cannot shape");
}

#ifdef PLUMB_WITH_NCCL
// One worker on a GPU over NCCL trains exactly as the plain loop does (the average of one is
// itself), its buckets live on the GPU, and the step's points come from CUDA events: every
// bucket completes after it was launched, within the step.
TEST(DataParallel, OneGpuWorkerOverNcclMatchesPlainTraining) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "needs a CUDA GPU";
  const torch::Device gpu(torch::kCUDA, 0);
  constexpr int kSteps = 4;
  auto reference = fc_model(16, gpu);
  std::vector<Batch> batches;
  torch::manual_seed(11);
  for (int i = 0; i < kSteps; ++i) batches.push_back(reference->make_batch());
  for (const auto& b : batches) reference->train_step(b);

  auto model = fc_model(16, gpu);
  run::WorldInfo world;
  world.master_port = run::free_loopback_port();
  const auto group = run::join_process_group(world, std::chrono::seconds(60), gpu);
  run::GradientReducer reducer(model->module(), group, /*bucket_bytes=*/4096, /*overlap=*/true);
  reducer.broadcast_state();
  ASSERT_GT(reducer.bucket_count(), 1u);
  for (const auto& b : batches) model->train_step(b);
  torch::cuda::synchronize();
  const auto& step = reducer.last_step();
  ASSERT_EQ(step.buckets.size(), reducer.bucket_count());
  EXPECT_GT(step.backward_s, 0.0);
  EXPECT_GE(step.exposed_s, 0.0);
  for (const auto& bucket : step.buckets) {
    EXPECT_GE(bucket.launched_s, 0.0);
    EXPECT_GE(bucket.done_s, bucket.launched_s);
    EXPECT_LE(bucket.done_s, step.backward_s + step.exposed_s + 1e-6);
  }
  const auto expected = reference->module().parameters();
  const auto got = model->module().parameters();
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_TRUE(got[i].is_cuda());
    EXPECT_TRUE(torch::allclose(got[i], expected[i], 1e-5, 1e-6))
        << "parameter " << i << " differs by " << (got[i] - expected[i]).abs().max().item<double>();
  }
}

TEST_F(Cli, DistOnAGpuRunsOverNccl) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "needs a CUDA GPU";
  const auto r = plumb(
      "dist autoenc --device cuda --workers 1 --batch-per-worker 8 --steps 4 --warmup-steps 1 "
      "--bucket-mb 0.01 --set hidden=16 --set latent=4 --allreduce-sweep --json --db " +
      db());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto w = nlohmann::json::parse(r.out).at("worlds").at(0);
  EXPECT_EQ(w.at("status"), "ok") << w.at("message");
  EXPECT_EQ(w.at("backend"), "nccl");
  EXPECT_EQ(w.at("device"), "cuda");
  EXPECT_GT(w.at("peak_device_bytes").get<double>(), 0);
  EXPECT_GT(w.at("buckets").get<int>(), 1);
  const auto& split = w.at("split");
  EXPECT_NEAR(
      split.at("compute_s").get<double>() + split.at("exposed_communication_s").get<double>(),
      w.at("step").at("mean_s").get<double>(), 1e-9);
  // One worker has no peer to all-reduce with: no sweep of a no-op.
  EXPECT_TRUE(w.at("allreduce").empty());
}
#endif  // PLUMB_WITH_NCCL

}  // namespace
}  // namespace plumb
#endif  // PLUMB_WITH_DIST
