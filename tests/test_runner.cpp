// Runner tests on fake workloads whose step behaviour is scripted: steady-state warm-up,
// CI-driven stopping, kept samples, and failure statuses instead of numbers.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "fake_workload.h"
#include "plumb/core/errors.h"
#include "plumb/run/runner.h"

namespace plumb {
namespace {

using testing::Behaviour;
using testing::fake_run_options;
using testing::fake_workload;

TEST(Runner, WarmsUpPastTheColdStartAndMeetsTheTarget) {
  auto w = fake_workload(Behaviour::kSteady);
  auto r = run::run_workload(w, fake_run_options(w));
  ASSERT_EQ(r.status, run::RunStatus::kOk) << r.message;
  EXPECT_TRUE(r.steady_detected);
  EXPECT_GE(r.warmup_s.size(), 15u);  // three windows of five
  EXPECT_GE(r.samples_s.size(), 10u);
  EXPECT_EQ(r.step_time.n, r.samples_s.size());
  EXPECT_TRUE(r.target_met);
  EXPECT_LE(r.step_time.ci_rel, 0.05);
  // The cold start (>= 6 ms by construction) was absorbed by the warm-up.
  EXPECT_GE(r.warmup_s[0], 0.006);
  EXPECT_NEAR(r.throughput, 4.0 / r.step_time.mean, 1e-9);
  EXPECT_EQ(r.throughput_unit, "samples/s");
  EXPECT_NE(r.command.find("plumb run fake --mode train --batch 4 --threads 1"), std::string::npos);
}

TEST(Runner, IterationBudgetStopsSampling) {
  auto w = fake_workload(Behaviour::kSteady);
  auto o = fake_run_options(w);
  o.target_ci = 1e-9;  // unreachable
  o.max_iterations = 12;
  auto r = run::run_workload(w, o);
  ASSERT_EQ(r.status, run::RunStatus::kOk);
  EXPECT_EQ(r.samples_s.size(), 12u);
  EXPECT_FALSE(r.target_met);
  EXPECT_FALSE(r.warnings.empty());
}

TEST(Runner, NaNLossBecomesAStatusNotANumber) {
  auto w = fake_workload(Behaviour::kNaN);
  auto r = run::run_workload(w, fake_run_options(w));
  EXPECT_EQ(r.status, run::RunStatus::kNanLoss);
  EXPECT_NE(r.message.find("iteration 20"), std::string::npos) << r.message;
  EXPECT_TRUE(std::isnan(r.throughput));
}

TEST(Runner, ExceptionsBecomeErrorAndOutOfMemoryStatuses) {
  auto thrower = fake_workload(Behaviour::kThrow);
  auto r = run::run_workload(thrower, fake_run_options(thrower));
  EXPECT_EQ(r.status, run::RunStatus::kError);
  EXPECT_EQ(r.message, "boom");
  auto oom = fake_workload(Behaviour::kBadAlloc);
  r = run::run_workload(oom, fake_run_options(oom));
  EXPECT_EQ(r.status, run::RunStatus::kOutOfMemory);
}

TEST(Runner, InvalidOptionsAreUsageErrors) {
  auto w = fake_workload(Behaviour::kSteady);
  auto o = fake_run_options(w);
  o.threads = 0;
  EXPECT_THROW(run::run_workload(w, o), UsageError);
  o = fake_run_options(w);
  o.target_ci = 0;
  EXPECT_THROW(run::run_workload(w, o), UsageError);
  o.target_ci = 1.5;
  EXPECT_THROW(run::run_workload(w, o), UsageError);
  o = fake_run_options(w);
  o.device = "tpu";
  EXPECT_THROW(run::run_workload(w, o), UsageError);
  o = fake_run_options(w);
  o.max_time_s = 0;
  EXPECT_THROW(run::run_workload(w, o), UsageError);
}

TEST(Runner, TooManyThreadsWarnsButRuns) {
  auto w = fake_workload(Behaviour::kSteady);
  auto o = fake_run_options(w);
  o.threads = 64;
  auto r = run::run_workload(w, o);
  EXPECT_EQ(r.status, run::RunStatus::kOk);
  bool warned = false;
  for (const auto& s : r.warnings) warned = warned || s.find("exceeds") != std::string::npos;
  EXPECT_TRUE(warned);
  run::apply_threads(1);
}

}  // namespace
}  // namespace plumb

namespace plumb {
namespace {

// The fake workload with a second config key, for --set.
Workload identity_workload() {
  Workload w = testing::fake_workload(Behaviour::kSteady);
  w.default_config = [] {
    Config c;
    c.add_int("batch", 4, "mini-batch size");
    c.add_int("layers", 2, "layers");
    return c;
  };
  return w;
}

// The one identity printer: the reproducer prints --mode, --batch, --threads and --seed always
// (their defaults are the workload's and the machine's) and every other option only where it
// differs from its default, in one fixed order; plumb run's line is byte for byte what it was.
TEST(SettingIdentity, ReproducerPrintsTheNonDefaultsInOneOrder) {
  const Workload w = identity_workload();
  run::RunOptions o = testing::fake_run_options(w);
  EXPECT_EQ(run::reproducer_command(w, o),
            "plumb run fake --mode train --batch 4 --threads 1 --seed 0 --target-ci 0.05 "
            "--max-time 5 --max-warmup-time 60");
  o.mode = Mode::kInfer;
  o.config.set_int("batch", 8);
  o.config.set_int("layers", 3);
  o.threads = 2;
  o.device = "cuda:1";
  o.dtype = Dtype::kInt8;
  o.keep_fp32 = {"fc1", "fc2"};
  o.embedding_bits = 4;
  o.memory_format = MemoryFormat::kChannelsLast;
  o.engine = Engine::kNative;
  o.heap = HeapPolicy::kReturn;
  o.seed = 7;
  o.min_samples = 3;
  EXPECT_EQ(run::reproducer_command(w, o),
            "plumb run fake --mode infer --batch 8 --threads 2 --device cuda:1 --dtype int8 "
            "--keep-fp32 fc1,fc2 --embedding-bits 4 --memory-format channels_last --engine native "
            "--heap return --seed 7 --target-ci 0.05 --max-time 5 --min-samples 3 "
            "--max-warmup-time 60 --set layers=3");
  // Canonical: every option that defines what was measured, defaults included, in the same
  // order; the seed and the budgets are not part of it.
  EXPECT_EQ(run::canonical_key(w, o),
            "mode=infer batch=8 threads=2 device=cuda:1 dtype=int8 keep_fp32=fc1,fc2 "
            "embedding_bits=4 memory_format=channels_last engine=native heap=return layers=3");
  EXPECT_EQ(run::canonical_key(w, testing::fake_run_options(w)),
            "mode=train batch=4 threads=1 device=cpu dtype=fp32 memory_format=contiguous "
            "engine=onednn heap=keep layers=2");
}

TEST(SettingIdentity, KeyDiffersWhenEngineOrHeapDiffersAndNotForSeedOrBudgets) {
  const Workload w = identity_workload();
  const run::RunOptions o = testing::fake_run_options(w);
  run::RunOptions native = o, returned = o, reseeded = o;
  native.engine = Engine::kNative;
  returned.heap = HeapPolicy::kReturn;
  reseeded.seed = 3;
  reseeded.max_time_s = 1;
  EXPECT_NE(run::canonical_key(w, native), run::canonical_key(w, o));
  EXPECT_NE(run::canonical_key(w, returned), run::canonical_key(w, o));
  EXPECT_NE(run::canonical_key(w, native), run::canonical_key(w, returned));
  EXPECT_EQ(run::canonical_key(w, reseeded), run::canonical_key(w, o));
  EXPECT_NE(run::reproducer_command(w, reseeded), run::reproducer_command(w, o));
}

}  // namespace
}  // namespace plumb
