// Memory profiler: every category of a small MLP and a small CNN against hand computation,
// the categorisation rules on hand-made recordings, the tracker's capacity limit, and the
// tracked peak against the kernel's measure of resident-set growth.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <memory>

#include "fresh_heap.h"
#include "fresh_process.h"
#include "plumb/core/errors.h"
#include "plumb/core/layer_scope.h"
#include "plumb/profile/allocation_tracker.h"
#include "plumb/profile/memory_breakdown.h"
#include "plumb/profile/memory_profiler.h"
#include "workload_test_util.h"

namespace plumb {
namespace {

using profile::MemoryCategory;

int64_t at(const profile::CategoryBytes& b, MemoryCategory c) {
  return b[static_cast<size_t>(c)];
}

enum class Optim { kSgdMomentum, kAdam };

std::unique_ptr<torch::optim::Optimizer> make_optimizer(Optim o, torch::nn::Module& m) {
  if (o == Optim::kAdam)
    return std::make_unique<torch::optim::Adam>(m.parameters(), torch::optim::AdamOptions(1e-3));
  return std::make_unique<torch::optim::SGD>(m.parameters(),
                                             torch::optim::SGDOptions(0.01).momentum(0.9));
}

// A model given as a forward function: loss = cross_entropy(forward(x), y). The forward is
// one expression chain, so the only tensors alive when backward begins are those autograd
// saved (plus the loss), which is what the hand computations below count.
class TestModel : public Model {
 public:
  TestModel(std::shared_ptr<torch::nn::Module> net,
            std::function<torch::Tensor(const torch::Tensor&)> forward,
            std::vector<int64_t> input_shape, int64_t classes, Optim optim)
      : net_(std::move(net)),
        forward_(std::move(forward)),
        input_shape_(std::move(input_shape)),
        classes_(classes),
        optimizer_(make_optimizer(optim, *net_)) {}
  torch::nn::Module& module() override { return *net_; }
  Batch make_batch() override {
    return {{torch::randn(input_shape_), torch::randint(classes_, {input_shape_[0]})},
            static_cast<double>(input_shape_[0])};
  }
  double train_step(const Batch& b) override {
    {
      LayerScope scope("optimizer");
      optimizer_->zero_grad();
    }
    torch::Tensor loss = torch::nn::functional::cross_entropy(forward_(b.tensors[0]), b.tensors[1]);
    loss.backward();
    {
      LayerScope scope("optimizer");
      optimizer_->step();
    }
    return loss.item<double>();
  }
  double infer_step(const Batch& b) override { return forward_(b.tensors[0]).sum().item<double>(); }

 private:
  std::shared_ptr<torch::nn::Module> net_;
  std::function<torch::Tensor(const torch::Tensor&)> forward_;
  std::vector<int64_t> input_shape_;
  int64_t classes_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
};

Workload test_workload(std::function<std::unique_ptr<Model>(int64_t batch)> make) {
  Workload w = testing::test_workload_shell("memtest", "memory test model", 16, 4);
  w.build = [make](const Config& c, const torch::Device&) { return make(c.get_int("batch")); };
  return w;
}

// MLP 32 -> 64 -> ReLU -> 10.
struct Mlp : torch::nn::Module {
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
  Mlp() {
    fc1 = register_module("fc1", torch::nn::Linear(32, 64));
    fc2 = register_module("fc2", torch::nn::Linear(64, 10));
  }
};
constexpr int64_t kMlpParams = 32 * 64 + 64 + 64 * 10 + 10;

Workload mlp_workload(Optim optim) {
  return test_workload([optim](int64_t batch) -> std::unique_ptr<Model> {
    auto net = std::make_shared<Mlp>();
    auto forward = [net](const torch::Tensor& x) {
      LayerScope scope("mlp");
      return net->fc2(torch::relu(net->fc1(x)));  // [B, 32] -> [B, 64] -> [B, 10]
    };
    return std::make_unique<TestModel>(net, forward, std::vector<int64_t>{batch, 32}, 10, optim);
  });
}

// Conv 3 -> 8 (3x3, pad 1) -> ReLU -> 2x2 max pool -> flatten -> linear to 10 classes.
struct Cnn : torch::nn::Module {
  torch::nn::Conv2d conv{nullptr};
  torch::nn::Linear fc{nullptr};
  Cnn() {
    conv = register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 8, 3).padding(1)));
    fc = register_module("fc", torch::nn::Linear(8 * 4 * 4, 10));
  }
};
constexpr int64_t kCnnParams = 3 * 8 * 9 + 8 + 8 * 4 * 4 * 10 + 10;

Workload cnn_workload(Optim optim) {
  return test_workload([optim](int64_t batch) -> std::unique_ptr<Model> {
    auto net = std::make_shared<Cnn>();
    auto forward = [net](const torch::Tensor& x) {
      // [B, 3, 8, 8] -> conv [B, 8, 8, 8] -> relu -> pool [B, 8, 4, 4] -> [B, 128] -> [B, 10]
      return net->fc(torch::max_pool2d(torch::relu(net->conv(x)), 2).flatten(1));
    };
    return std::make_unique<TestModel>(net, forward, std::vector<int64_t>{batch, 3, 8, 8}, 10,
                                       optim);
  });
}

profile::MemoryProfileResult profile(
    const Workload& w, Mode mode, int64_t batch, int64_t limit = 0,
    bool return_freed_memory = false,
    profile::AllocationSource source = profile::AllocationSource::kCpuAllocatorWrapper) {
  run::RunOptions o;
  o.workload = w.info.name;
  o.mode = mode;
  o.config = w.default_config();
  o.config.set_int("batch", batch);
  if (return_freed_memory) o.heap = HeapPolicy::kReturn;
  profile::MemoryOptions m;
  m.limit_bytes = limit;
  m.source = source;
  return profile::profile_memory(w, o, m);
}

// What is alive besides the network's activations when the first autograd node runs:
// cross_entropy's log_softmax result [B, classes] (saved by log_softmax and nll_loss backward),
// nll_loss's total_weight scalar (saved), the loss scalar, and the seed gradient
// ones_like(loss) that loss.backward() makes before the engine starts (4 bytes each).
int64_t cross_entropy_saved(int64_t batch, int64_t classes) {
  return batch * classes * 4 + 4 + 4 + 4;
}

TEST(MemoryProfile, MlpEveryCategoryMatchesHandComputation) {
  const int64_t b = 16;
  const auto r = profile(mlp_workload(Optim::kSgdMomentum), Mode::kTrain, b);
  ASSERT_EQ(r.status, run::RunStatus::kOk) << r.message;
  const auto& mix = r.breakdown.at_total_peak;
  EXPECT_EQ(at(r.breakdown.peak, MemoryCategory::kWeights), kMlpParams * 4);
  EXPECT_EQ(at(r.breakdown.peak, MemoryCategory::kGradients), kMlpParams * 4);
  EXPECT_EQ(at(r.breakdown.peak, MemoryCategory::kOptimizerState), kMlpParams * 4);  // momentum
  EXPECT_EQ(at(r.breakdown.peak, MemoryCategory::kInput), b * 32 * 4 + b * 8);       // x, int64 y
  // Saved for backward: relu's output [B, 64] (also fc2's input); fc1's output and the logits
  // are not kept (relu and log_softmax save their results, not their inputs).
  EXPECT_EQ(at(r.breakdown.peak, MemoryCategory::kFeatureMaps),
            b * 64 * 4 + cross_entropy_saved(b, 10));
  EXPECT_EQ(at(r.breakdown.peak, MemoryCategory::kOther), 0);
  EXPECT_GT(at(r.breakdown.peak, MemoryCategory::kWorkspace), 0);
  int64_t sum = 0;
  for (int64_t x : mix) sum += x;
  EXPECT_EQ(sum, r.breakdown.total_peak);
  EXPECT_GE(r.breakdown.total_peak, 3 * kMlpParams * 4);
  ASSERT_FALSE(r.breakdown.feature_map_layers.empty());
  EXPECT_EQ(r.breakdown.feature_map_layers.front().layer, "mlp");
  EXPECT_FALSE(r.breakdown.backward_starts_ns.empty());
}

TEST(MemoryProfile, AdamKeepsTwoMomentsPerParameter) {
  const auto r = profile(mlp_workload(Optim::kAdam), Mode::kTrain, 8);
  ASSERT_EQ(r.status, run::RunStatus::kOk) << r.message;
  EXPECT_EQ(at(r.breakdown.peak, MemoryCategory::kOptimizerState), 2 * kMlpParams * 4);
  EXPECT_EQ(at(r.breakdown.peak, MemoryCategory::kGradients), kMlpParams * 4);
}

TEST(MemoryProfile, CnnEveryCategoryMatchesHandComputation) {
  const int64_t b = 4;
  const auto r = profile(cnn_workload(Optim::kSgdMomentum), Mode::kTrain, b);
  ASSERT_EQ(r.status, run::RunStatus::kOk) << r.message;
  EXPECT_EQ(at(r.breakdown.peak, MemoryCategory::kWeights), kCnnParams * 4);
  EXPECT_EQ(at(r.breakdown.peak, MemoryCategory::kGradients), kCnnParams * 4);
  EXPECT_EQ(at(r.breakdown.peak, MemoryCategory::kOptimizerState), kCnnParams * 4);
  EXPECT_EQ(at(r.breakdown.peak, MemoryCategory::kInput), b * 3 * 8 * 8 * 4 + b * 8);
  // Saved: relu's output [B, 8, 8, 8] (also max pool's input), max pool's int64 indices and
  // output [B, 8, 4, 4] (the linear layer's input, through a flattening view). The conv's
  // output is not kept (conv saves its input, the batch, and weight).
  const int64_t relu = b * 8 * 8 * 8 * 4, indices = b * 8 * 4 * 4 * 8, pooled = b * 8 * 4 * 4 * 4;
  EXPECT_EQ(at(r.breakdown.peak, MemoryCategory::kFeatureMaps),
            relu + indices + pooled + cross_entropy_saved(b, 10));
  EXPECT_EQ(at(r.breakdown.peak, MemoryCategory::kOther), 0);
}

TEST(MemoryProfile, InferenceKeepsNoFeatureMapsGradientsOrOptimizerState) {
  const auto r = profile(cnn_workload(Optim::kSgdMomentum), Mode::kInfer, 4);
  ASSERT_EQ(r.status, run::RunStatus::kOk) << r.message;
  EXPECT_EQ(at(r.breakdown.peak, MemoryCategory::kWeights), kCnnParams * 4);
  EXPECT_EQ(at(r.breakdown.peak, MemoryCategory::kGradients), 0);
  EXPECT_EQ(at(r.breakdown.peak, MemoryCategory::kOptimizerState), 0);
  EXPECT_EQ(at(r.breakdown.peak, MemoryCategory::kFeatureMaps), 0);
  // The largest activation, the conv output [4, 8, 8, 8], lives only as workspace.
  EXPECT_GE(at(r.breakdown.peak, MemoryCategory::kWorkspace), 4 * 8 * 8 * 8 * 4);
}

TEST(MemoryProfile, FeatureMapsGrowLinearlyWithBatchAndWeightsStayFlat) {
  const auto r8 = profile(mlp_workload(Optim::kSgdMomentum), Mode::kTrain, 8);
  const auto r32 = profile(mlp_workload(Optim::kSgdMomentum), Mode::kTrain, 32);
  ASSERT_EQ(r32.status, run::RunStatus::kOk) << r32.message;
  EXPECT_EQ(at(r8.breakdown.peak, MemoryCategory::kWeights),
            at(r32.breakdown.peak, MemoryCategory::kWeights));
  EXPECT_EQ(at(r32.breakdown.peak, MemoryCategory::kFeatureMaps) -
                at(r8.breakdown.peak, MemoryCategory::kFeatureMaps),
            24 * (64 + 10) * 4);
}

// The allocators' profiler reports are how a GPU pass sees its tensors (the CUDA caching
// allocator reports through the same hook as the CPU allocator). On the CPU both sources see
// the same allocations, so every category, the peak and the mix at the peak must agree.
TEST(MemoryProfile, AllocatorReportsGiveTheWrappersCategories) {
  const auto reports = profile::AllocationSource::kProfilerReports;
  struct Case {
    Workload w;
    Mode mode;
    int64_t batch;
  };
  for (const Case& c : {Case{mlp_workload(Optim::kSgdMomentum), Mode::kTrain, 16},
                        Case{cnn_workload(Optim::kAdam), Mode::kTrain, 4},
                        Case{cnn_workload(Optim::kSgdMomentum), Mode::kInfer, 4}}) {
    const auto wrapped = profile(c.w, c.mode, c.batch);
    const auto reported = profile(c.w, c.mode, c.batch, 0, false, reports);
    ASSERT_EQ(reported.status, run::RunStatus::kOk) << reported.message;
    EXPECT_EQ(reported.source, reports);
    EXPECT_EQ(reported.limit_bytes, 0);  // nothing enforced
    const std::string what = std::string(mode_name(c.mode)) + " batch " + std::to_string(c.batch);
    for (size_t i = 0; i < wrapped.breakdown.peak.size(); ++i) {
      EXPECT_EQ(reported.breakdown.peak[i], wrapped.breakdown.peak[i]) << what << " category " << i;
      EXPECT_EQ(reported.breakdown.at_total_peak[i], wrapped.breakdown.at_total_peak[i])
          << what << " category " << i;
    }
    EXPECT_EQ(reported.breakdown.total_peak, wrapped.breakdown.total_peak) << what;
    EXPECT_EQ(reported.breakdown.allocations, wrapped.breakdown.allocations) << what;
    EXPECT_GT(reported.breakdown.allocations, 0) << what;
  }
  // The hand computation of the MLP holds through the reports alone.
  const auto r = profile(mlp_workload(Optim::kSgdMomentum), Mode::kTrain, 16, 0, false, reports);
  EXPECT_EQ(at(r.breakdown.peak, MemoryCategory::kWeights), kMlpParams * 4);
  EXPECT_EQ(at(r.breakdown.peak, MemoryCategory::kOptimizerState), kMlpParams * 4);
  EXPECT_EQ(at(r.breakdown.peak, MemoryCategory::kFeatureMaps),
            16 * 64 * 4 + cross_entropy_saved(16, 10));
}

TEST(MemoryProfile, AllocatorReportsRefuseALimitTheyCannotEnforce) {
  try {
    profile(mlp_workload(Optim::kSgdMomentum), Mode::kTrain, 16, 1 << 20, false,
            profile::AllocationSource::kProfilerReports);
    FAIL() << "a limit with the allocator reports was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("none can be refused"), std::string::npos) << e.what();
  }
}

TEST(MemoryProfile, LimitBelowTheWeightsIsOutOfMemoryNotACrash) {
  const auto r = profile(mlp_workload(Optim::kSgdMomentum), Mode::kTrain, 16, 4096);
  EXPECT_EQ(r.status, run::RunStatus::kOutOfMemory);
  EXPECT_NE(r.message.find("memory limit"), std::string::npos) << r.message;
  // The process can still allocate normally afterwards: the hook is uninstalled.
  EXPECT_EQ(torch::ones({1 << 20}).sum().item<double>(), 1 << 20);
}

TEST(MemoryProfile, RejectsBadOptions) {
  run::RunOptions o;
  const Workload w = mlp_workload(Optim::kSgdMomentum);
  o.workload = w.info.name;
  o.config = w.default_config();
  profile::MemoryOptions m;
  m.warmup_steps = 0;
  EXPECT_THROW(profile::profile_memory(w, o, m), UsageError);
}

// Large enough that the allocator's and libraries' own overheads are small next to it: three
// 2048-wide layers (weights, gradients and momentum of 12.6 M parameters: 151 MB) at batch 512.
TEST(MemoryProfile, TrackedPeakAgreesWithResidentSetGrowth) {
  PLUMB_RUN_IN_FRESH_PROCESS();
  struct Wide : torch::nn::Module {
    torch::nn::Sequential layers{nullptr};
    Wide() {
      layers = register_module(
          "layers", torch::nn::Sequential(torch::nn::Linear(2048, 2048), torch::nn::ReLU(),
                                          torch::nn::Linear(2048, 2048), torch::nn::ReLU(),
                                          torch::nn::Linear(2048, 2048), torch::nn::ReLU(),
                                          torch::nn::Linear(2048, 10)));
    }
  };
  const Workload w = test_workload([](int64_t batch) -> std::unique_ptr<Model> {
    auto net = std::make_shared<Wide>();
    auto forward = [net](const torch::Tensor& x) { return net->layers->forward(x); };
    return std::make_unique<TestModel>(net, forward, std::vector<int64_t>{batch, 2048}, 10,
                                       Optim::kSgdMomentum);
  });
  ASSERT_TRUE(testing::heap_is_fresh()) << testing::kHeapNotFresh;
  // The BLAS allocates its own buffers on first use; do that before the measurement.
  torch::mm(torch::ones({512, 512}), torch::ones({512, 512}));
  const auto r = profile(w, Mode::kTrain, 512, 0, /*return_freed_memory=*/true);
  ASSERT_EQ(r.status, run::RunStatus::kOk) << r.message;
  if (r.rss_peak_growth < 0) GTEST_SKIP() << "needs /proc/self/clear_refs (Linux 4.0 or later)";
  const double ratio = static_cast<double>(r.tracked_peak) / static_cast<double>(r.rss_peak_growth);
  EXPECT_NEAR(ratio, 1.0, 0.10) << "tracked " << r.tracked_peak << " rss growth "
                                << r.rss_peak_growth;
}

// The rules on a hand-made recording: step 3 recorded, one backward start at t = 100.
TEST(MemoryBreakdown, CategoriesFollowPhaseAndLifetime) {
  profile::AllocationRecording rec;
  rec.duration_ns = 300;
  rec.backward_starts_ns = {100};
  auto add = [&](uint64_t id, size_t bytes, profile::StepPhase phase, int64_t step,
                 int64_t alloc_ns, int64_t free_ns) {
    // TrackedAllocation's fields in order (no address, no operator).
    rec.allocations.push_back(
        {id, 0, bytes, phase, step, "", id == 5 ? "conv1" : "", alloc_ns, free_ns, std::nullopt});
  };
  using P = profile::StepPhase;
  add(1, 1000, P::kBuild, -1, -1, -1);     // a parameter
  add(2, 1000, P::kBackward, 0, -1, -1);   // its gradient, made in step 0
  add(3, 2000, P::kOptimizer, 0, -1, -1);  // momentum, made in step 0
  add(4, 64, P::kData, -1, -1, -1);        // the batch
  add(5, 500, P::kForward, 3, 10, 150);    // alive at backward start: feature map
  add(6, 700, P::kForward, 3, 20, 60);     // freed within forward: workspace
  add(7, 300, P::kBackward, 3, 120, 130);  // freed within backward: workspace
  add(8, 50, P::kOptimizer, 3, 250, 260);  // optimizer temporary: workspace
  add(9, 10, P::kBuild, -1, -1, -1);       // unidentified leftover of the build: other
  add(10, 40, P::kForward, 3, 200, -1);    // made after backward and kept: other
  profile::KnownAllocations known;
  known.weights = {1};
  known.gradients = {2};
  known.input = {4};
  const auto b = profile::break_down(rec, known, 3, 50);
  EXPECT_EQ(at(b.peak, MemoryCategory::kWeights), 1000);
  EXPECT_EQ(at(b.peak, MemoryCategory::kGradients), 1000);
  EXPECT_EQ(at(b.peak, MemoryCategory::kOptimizerState), 2000);
  EXPECT_EQ(at(b.peak, MemoryCategory::kInput), 64);
  EXPECT_EQ(at(b.peak, MemoryCategory::kFeatureMaps), 500);
  EXPECT_EQ(at(b.peak, MemoryCategory::kWorkspace), 700);
  EXPECT_EQ(at(b.peak, MemoryCategory::kOther), 50);
  // Total peak at t = 20: base 4074 + 500 + 700.
  EXPECT_EQ(b.total_peak, 4074 + 1200);
  EXPECT_EQ(b.total_peak_ns, 20);
  EXPECT_EQ(at(b.at_total_peak, MemoryCategory::kWorkspace), 700);
  ASSERT_EQ(b.feature_map_layers.size(), 1u);
  EXPECT_EQ(b.feature_map_layers[0].layer, "conv1");
  EXPECT_EQ(b.feature_map_layers[0].bytes, 500);
  EXPECT_EQ(b.allocations, 5);
  EXPECT_EQ(b.largest.front().bytes, 700);
  // The timeline starts at the baseline and contains the peak.
  ASSERT_GE(b.timeline.size(), 2u);
  int64_t best = 0;
  for (const auto& p : b.timeline) {
    int64_t sum = 0;
    for (int64_t x : p.bytes) sum += x;
    best = std::max(best, sum);
  }
  EXPECT_EQ(best, b.total_peak);
}

TEST(MemoryBreakdown, TimelineIsBoundedAndKeepsThePeak) {
  profile::AllocationRecording rec;
  rec.duration_ns = 100000;
  for (uint64_t i = 0; i < 1000; ++i) {
    profile::TrackedAllocation a;
    a.id = i + 1;
    a.bytes = i == 517 ? 100000 : 10;
    a.phase = profile::StepPhase::kForward;
    a.step = 0;
    a.alloc_ns = static_cast<int64_t>(i * 100);
    a.free_ns = static_cast<int64_t>(i * 100 + 50);
    rec.allocations.push_back(a);
  }
  const auto b = profile::break_down(rec, {}, 0, 20);
  EXPECT_LE(b.timeline.size(), 20u);
  EXPECT_EQ(b.total_peak, 100000);
  bool has_peak = false;
  for (const auto& p : b.timeline) has_peak |= at(p.bytes, MemoryCategory::kWorkspace) == 100000;
  EXPECT_TRUE(has_peak);
}

}  // namespace
}  // namespace plumb
