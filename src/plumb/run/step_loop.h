// The pieces of a measurement that the timing runner and the profiler share: a model built
// for a mode (train, or eval under InferenceMode), a loop that times single steps over a pool
// of pre-generated batches, warm-up to steady state, and the mapping of workload failures
// (NaN loss, out of memory, exceptions) to run statuses.
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <vector>

#include "plumb/core/clock.h"
#include "plumb/core/generation.h"
#include "plumb/core/workload.h"
#include "plumb/run/run_result.h"
#include "plumb/run/runner.h"

namespace plumb::run {

// The user scope (at::RecordFunction) under which batches are synthesised, so observers can
// tell data preparation from the model's own work.
inline constexpr char kDataScope[] = "plumb::data";

// Distinct synthetic batches a loop cycles through (see step_loop.cpp).
inline constexpr size_t kDefaultBatchPool = 3;

class StepLoop {
 public:
  // `prepare` puts each synthetic batch in the run's precision and memory format.
  StepLoop(Model& model, Mode mode, const torch::Device& device,
           size_t batch_pool = kDefaultBatchPool, const std::function<Batch(Batch)>& prepare = {});

  // One timed step, seconds (a CUDA device is synchronised before the clock stops).
  // Throws NonFiniteLoss when the step's loss/output is NaN or infinite. An inference step of
  // a generative model is one generation (core/generation.h), timed call by call: its time is
  // the sum of its prefill and decode calls, and last_generation() holds them.
  double step();

  // The latest step's generation, or nullptr (a one-shot model, or training).
  const GenerationTrace* last_generation() const {
    return last_generation_ ? &*last_generation_ : nullptr;
  }
  // The model's generative side when this loop runs it in inference, else nullptr.
  GenerativeModel* generative() const { return generative_; }

  // Testing aid (injected_step_delay_s()): every later step sleeps this long inside the timed
  // region, a known slowdown for checking plumb compare. Only the timing runner sets it.
  void set_injected_delay(double seconds) { injected_delay_s_ = seconds; }

  // A batch of `examples` examples made like the pool's (same precision and memory format,
  // outside any timed region), or std::nullopt when the model's batch is fixed by its
  // configuration (Model::make_batch_of).
  std::optional<Batch> batch_of(int64_t examples);

  double units() const { return units_; }
  double last_value() const { return last_value_; }
  Model& model() { return model_; }
  const torch::Device& device() const { return device_; }
  const std::vector<Batch>& batches() const { return batches_; }
  // Whether every batch of the pool has the same tensors (count, shapes, dtypes): then a
  // shape-static model runs the same calls on the same shapes every step.
  bool batches_share_shapes() const;

 private:
  Model& model_;
  Mode mode_;
  torch::Device device_;
  std::function<Batch(Batch)> prepare_;
  std::vector<Batch> batches_;
  double units_ = 0;
  size_t next_ = 0;
  double last_value_ = 0;
  double injected_delay_s_ = 0;
  GenerativeModel* generative_ = nullptr;
  std::optional<GenerationTrace> last_generation_;
};

// The environment variable of the testing aid above, read by the timing runner.
inline constexpr char kInjectDelayVariable[] = "PLUMB_INJECT_STEP_DELAY_MS";

// Seconds of delay PLUMB_INJECT_STEP_DELAY_MS asks for (0 when unset). Throws UsageError
// when it is set but not a non-negative number of milliseconds.
double injected_step_delay_s();

struct NonFiniteLoss {
  double value;
  size_t iteration;
};

// Steps until the iteration times are steady or a cap (iterations, seconds) is hit; appends
// to result.warmup_s, sets steady_detected, and warns when the cap was hit.
void warm_up(StepLoop& loop, const RunOptions& options, RunResult& result,
             const ProgressFn& progress);

// Maps a failure raised while building or stepping a model to result.status/message (a
// precision without a kernel: unsupported; NaN: nan_loss; out of memory; anything else: error).
// Rethrows UsageError, which is the user's input, not the workload.
void record_failure(std::exception_ptr failure, const RunOptions& options, RunResult& result);

// Selects LibTorch's convolution / GEMM path (Engine) for as long as it lives, and restores
// the previous choice: the flag is process-wide, and a later measurement must not inherit it.
class EngineChoice {
 public:
  explicit EngineChoice(Engine engine);
  ~EngineChoice();
  EngineChoice(const EngineChoice&) = delete;
  EngineChoice& operator=(const EngineChoice&) = delete;

 private:
  bool previous_;
};

// Builds the workload's model for `options` (seed, threads, device, engine, mode state, precision
// and memory format: precision_session.h), runs `body` with a step loop over it, and turns any
// workload failure into result.status/message (UsageError still propagates: that is the
// user's input, not the workload); a precision that cannot run gives status unsupported. The
// loop holds `batch_pool` batches; result.precision_notes says what ran in which precision.
void with_model(const Workload& workload, const RunOptions& options, RunResult& result,
                const std::function<void(StepLoop&)>& body, size_t batch_pool = kDefaultBatchPool);

}  // namespace plumb::run
