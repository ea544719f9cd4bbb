// Shared measurement machinery: step loop, warm-up, failure mapping (see step_loop.h).
#include "plumb/run/step_loop.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <new>

#include <ATen/record_function.h>
#include <c10/core/InferenceMode.h>
#include <fmt/format.h>

#include "plumb/core/errors.h"
#include "plumb/core/kill_point.h"
#include "plumb/core/text.h"
#include "plumb/run/model_footprint.h"
#include "plumb/run/precision_session.h"

namespace plumb::run {
namespace {

using Clock = std::chrono::steady_clock;

bool is_out_of_memory(const std::string& what) {
  return what.find("out of memory") != std::string::npos ||
         what.find("can't allocate memory") != std::string::npos ||
         what.find("Cannot allocate memory") != std::string::npos;
}

}  // namespace

double injected_step_delay_s() {
  const char* text = std::getenv(kInjectDelayVariable);
  if (text == nullptr || *text == '\0') return 0;
  char* end = nullptr;
  const double ms = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(ms >= 0) || !std::isfinite(ms))
    throw UsageError(
        fmt::format("{}={}: give a non-negative number of milliseconds, or unset it "
                    "(it is a testing aid, see docs/compare.md)",
                    kInjectDelayVariable, text));
  return ms / 1000;
}

// A few distinct synthetic batches, generated before timing so data synthesis never enters a
// step time, cycled so consecutive steps do not see identical inputs.
StepLoop::StepLoop(Model& model, Mode mode, const torch::Device& device, size_t batch_pool,
                   const std::function<Batch(Batch)>& prepare)
    : model_(model),
      mode_(mode),
      device_(device),
      prepare_(prepare),
      generative_(mode == Mode::kInfer ? as_generative(model) : nullptr) {
  PLUMB_ASSERT(batch_pool >= 1, "a step loop needs at least one batch");
  for (size_t i = 0; i < batch_pool; ++i) {
    at::RecordFunction scope(at::RecordScope::USER_SCOPE);
    if (scope.isActive()) scope.before(kDataScope);
    batches_.push_back(prepare_ ? prepare_(model_.make_batch()) : model_.make_batch());
  }
  units_ = batches_.front().units;
}

bool StepLoop::batches_share_shapes() const {
  const auto same = [](const Batch& a, const Batch& b) {
    if (a.tensors.size() != b.tensors.size()) return false;
    for (size_t i = 0; i < a.tensors.size(); ++i) {
      const torch::Tensor &x = a.tensors[i], &y = b.tensors[i];
      if (x.defined() != y.defined()) return false;
      if (x.defined() && (x.sizes() != y.sizes() || x.scalar_type() != y.scalar_type()))
        return false;
    }
    return true;
  };
  return std::all_of(batches_.begin(), batches_.end(),
                     [&](const Batch& b) { return same(b, batches_.front()); });
}

std::optional<Batch> StepLoop::batch_of(int64_t examples) {
  at::RecordFunction scope(at::RecordScope::USER_SCOPE);
  if (scope.isActive()) scope.before(kDataScope);
  auto batch = model_.make_batch_of(examples);
  if (batch && prepare_) return prepare_(std::move(*batch));
  return batch;
}

double StepLoop::step() {
  const Batch& batch = batches_[next_++ % batches_.size()];
  auto start = Clock::now();
  double elapsed = 0;
  if (generative_ != nullptr) {
    last_generation_ = generate(*generative_, batch, device_);
    // Finite logits of the last call stand for the output (as infer_step's summary does).
    last_value_ = generative_->last_logits().sum().item<double>();
    elapsed = last_generation_->total_s();
  } else {
    last_value_ = mode_ == Mode::kTrain ? model_.train_step(batch) : model_.infer_step(batch);
    if (device_.is_cuda()) torch::cuda::synchronize();
  }
  // A spin, not a sleep: a sleep wakes up late by a varying amount on a busy machine, and the
  // point of the aid is a known slowdown.
  if (injected_delay_s_ > 0) {
    const auto spin_start = Clock::now();
    const auto until = spin_start + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(injected_delay_s_));
    while (Clock::now() < until) {
    }
    if (generative_ != nullptr) elapsed += seconds_since(spin_start);
  }
  if (generative_ == nullptr) elapsed = seconds_since(start);
  if (!std::isfinite(last_value_)) throw NonFiniteLoss{last_value_, next_};
  return elapsed;
}

void warm_up(StepLoop& loop, const RunOptions& o, RunResult& r, const ProgressFn& progress) {
  auto start = Clock::now();
  while (true) {
    r.warmup_s.push_back(loop.step());
    kill_point("warmup");
    if (tail_is_steady(r.warmup_s, o.steady)) {
      r.steady_detected = true;
      break;
    }
    if (r.warmup_s.size() >= o.max_warmup_iterations || seconds_since(start) >= o.max_warmup_s) {
      r.warnings.push_back(fmt::format(
          "steady state not detected after {} warm-up iterations ({:.1f} s); measured anyway",
          r.warmup_s.size(), seconds_since(start)));
      break;
    }
  }
  if (progress)
    progress(fmt::format("warm-up: {} iterations in {:.1f} s ({})", r.warmup_s.size(),
                         seconds_since(start), r.steady_detected ? "steady" : "cap reached"));
}

void record_failure(std::exception_ptr failure, const RunOptions& o, RunResult& r) {
  try {
    std::rethrow_exception(failure);
  } catch (const PrecisionUnsupported& e) {
    r.status = RunStatus::kUnsupported;
    r.message = fmt::format("unsupported in {}: {}", dtype_name(o.dtype), e.reason);
  } catch (const NonFiniteLoss& e) {
    r.status = RunStatus::kNanLoss;
    r.message = fmt::format("{} became {} at iteration {}",
                            o.mode == Mode::kTrain ? "loss" : "output", e.value, e.iteration);
  } catch (const UsageError&) {
    throw;
  } catch (const std::bad_alloc&) {
    r.status = RunStatus::kOutOfMemory;
    r.message = "out of memory (std::bad_alloc); try a smaller --batch";
  } catch (const c10::Error& e) {
    const std::string what = first_line(e.what_without_backtrace());
    if (is_missing_kernel(what)) {
      r.status = RunStatus::kUnsupported;
      r.message = fmt::format("unsupported in {}: {}", dtype_name(o.dtype), what);
      return;
    }
    r.status = is_out_of_memory(what) ? RunStatus::kOutOfMemory : RunStatus::kError;
    r.message = r.status == RunStatus::kOutOfMemory ? what + "; try a smaller --batch" : what;
  } catch (const std::exception& e) {
    r.status = RunStatus::kError;
    r.message = first_line(e.what());
  }
}

EngineChoice::EngineChoice(Engine engine) : previous_(at::globalContext().userEnabledMkldnn()) {
  at::globalContext().setUserEnabledMkldnn(engine == Engine::kOnednn);
}

EngineChoice::~EngineChoice() {
  at::globalContext().setUserEnabledMkldnn(previous_);
}

void with_model(const Workload& workload, const RunOptions& o, RunResult& r,
                const std::function<void(StepLoop&)>& body, size_t batch_pool) {
  std::string thread_warning = apply_threads(o.threads);
  if (!thread_warning.empty()) r.warnings.push_back(thread_warning);
  torch::manual_seed(o.seed);
  const torch::Device device = parse_device(o.device);
  const EngineChoice engine(o.engine);
  if (device.is_cpu()) refuse_if_it_cannot_fit(workload, o);
  try {
    auto model = workload.build(o.config, device);
    // Before InferenceMode: converting parameters (fp16, channels_last) must not make them
    // inference tensors.
    PrecisionSession precision(*model, o);
    // Inference runs in eval mode without autograd bookkeeping, as a deployed model would.
    std::unique_ptr<c10::InferenceMode> no_autograd;
    if (o.mode == Mode::kInfer) {
      model->module().eval();
      no_autograd = std::make_unique<c10::InferenceMode>();
    } else {
      model->module().train();
    }
    const auto prepare = [&](Batch b) { return precision.prepare(std::move(b)); };
    // The timed batches first, so every precision times the same inputs for one seed.
    StepLoop loop(*model, o.mode, device, batch_pool, prepare);
    std::vector<Batch> calibration;
    if (o.dtype == Dtype::kInt8) {
      at::RecordFunction scope(at::RecordScope::USER_SCOPE);
      if (scope.isActive()) scope.before(kDataScope);
      for (int i = 0; i < int8_calibration_batches(*model); ++i)
        calibration.push_back(prepare(model->make_batch()));
    }
    precision.begin(calibration, {o.keep_fp32.begin(), o.keep_fp32.end()}, o.embedding_bits);
    r.precision_notes = precision.notes();
    r.quantized_layers = precision.quantized_layers();
    body(loop);
  } catch (...) {
    record_failure(std::current_exception(), o, r);
  }
}

}  // namespace plumb::run
