// What `plumb tune` may change in a run without changing what the workload computes (its tuning
// space), and the short trials that measure a list of configurations of it. A trial builds the
// model once per precision, memory format and batch, and times every configuration that shares
// them (threads, engine, heap) on that one model, so rung 0 of a 64-point space builds at most
// eight models.
#pragma once

#include <chrono>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "plumb/core/workload.h"
#include "plumb/run/run_result.h"
#include "plumb/run/runner.h"
#include "plumb/run/tune_point.h"

namespace plumb::run {

struct TuneSpace {
  RunOptions stock;  // the configuration every value 0 stands for
  std::vector<TuneFactor> factors;
  // Settings that exist but are not searched here, each with the reason.
  std::vector<std::string> not_searched;
};

struct TuneSpaceRequest {
  std::vector<Dtype> dtypes;      // precisions allowed besides the stock's (error checked)
  bool has_convolutions = false;  // 4-D weights: memory format can matter
  std::vector<int64_t> batches;   // besides the stock's; empty: batch is not searched
};

// Factors, in this order: threads (the stock's count, then halves down to 1), dtype,
// memory_format (with convolutions only), engine, heap, batch (when asked). A factor with one
// value is left out and said in not_searched.
TuneSpace make_tune_space(const RunOptions& stock, const TuneSpaceRequest& request);

// The run options of a point of the space.
RunOptions options_at(const TuneSpace& space, const TunePoint& point);

// Whether the workload's model has 4-D weights (convolutions), from one build.
bool has_convolution_weights(const Workload& workload, const RunOptions& options);

// Warm-up steps before a trial's timed steps: enough for oneDNN to create and cache its
// primitives for the shapes and a batch pool's round.
inline constexpr size_t kTrialWarmupSteps = 2;
// A model whose step takes microseconds would be judged on noise after a few steps: a trial
// warms up for at least kMinWarmupS and times at least kMinTrialStepS per step it was asked
// for (a rung of 3 steps times at least 30 ms), taking more steps as needed.
inline constexpr double kMinWarmupS = 0.02;
inline constexpr double kMinTrialStepS = 0.01;
// A trial whose seconds per unit exceed this multiple of the fastest trial so far stops after
// its first timed step (it cannot come near the lead; its throughput is still recorded).
inline constexpr double kTrialCutFactor = 4;
// A trial whose first warm-up step alone takes this multiple of the fastest trial's time per
// unit is not stepped further (LibTorch's bf16 convolutions without oneDNN: 23-94x slower on
// resnet50 here); that step, one-time costs included, stands for its throughput.
inline constexpr double kWarmupCutFactor = 10;

// The outcome message of a configuration a call did not reach before its deadline.
inline constexpr char kNotReached[] = "not measured: the search's budget was spent";

class TrialRunner {
 public:
  TrialRunner(const Workload& workload, const TuneSpace& space, ProgressFn progress = {});
  // Measures `points` with `steps` timed steps each, one outcome per point in order (the
  // search's measuring callback, analysis::MeasureFn).
  std::vector<TrialOutcome> operator()(const std::vector<TunePoint>& points, size_t steps);
  // From this time on, a call starts no further trial once it has measured one: the rest come
  // back not ok with kNotReached (so a first rung larger than the budget ends with it). With a
  // deadline, a call measures the first configuration of every model before the others.
  void set_deadline(std::chrono::steady_clock::time_point deadline) { deadline_ = deadline; }

 private:
  const Workload& workload_;
  const TuneSpace& space_;
  ProgressFn progress_;
  std::optional<std::chrono::steady_clock::time_point> deadline_;
  double fastest_unit_s_ = INFINITY;  // seconds per unit of the fastest trial so far
};

}  // namespace plumb::run
