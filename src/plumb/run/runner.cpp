// Steady-state runner (see runner.h).
#include "plumb/run/runner.h"

#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <ctime>
#include <limits>
#include <new>
#include <thread>

#include <c10/core/InferenceMode.h>
#include <fmt/format.h>

#include "plumb/core/errors.h"
#include "plumb/core/text.h"

namespace plumb::run {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

std::string utc_now_iso8601() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// A few distinct synthetic batches, generated before timing so data synthesis never enters a
// step time, cycled so consecutive steps do not see identical inputs.
constexpr size_t kBatchPool = 3;

// Stops a run early with a status (NaN loss); distinct from workload exceptions.
struct NonFiniteLoss {
  double value;
};

class StepLoop {
 public:
  StepLoop(Model& model, const RunOptions& options, const torch::Device& device)
      : model_(model), options_(options), device_(device) {
    for (size_t i = 0; i < kBatchPool; ++i) batches_.push_back(model_.make_batch());
  }

  // One timed step; returns seconds.
  double step() {
    const Batch& batch = batches_[next_++ % batches_.size()];
    auto start = Clock::now();
    last_value_ =
        options_.mode == Mode::kTrain ? model_.train_step(batch) : model_.infer_step(batch);
    if (device_.is_cuda()) torch::cuda::synchronize();
    double elapsed = seconds_since(start);
    if (!std::isfinite(last_value_)) throw NonFiniteLoss{last_value_};
    return elapsed;
  }

  double units() const { return batches_.front().units; }
  double last_value() const { return last_value_; }

 private:
  Model& model_;
  const RunOptions& options_;
  torch::Device device_;
  std::vector<Batch> batches_;
  size_t next_ = 0;
  double last_value_ = 0;
};

void warm_up(StepLoop& loop, const RunOptions& o, RunResult& r, const ProgressFn& progress) {
  auto start = Clock::now();
  while (true) {
    r.warmup_s.push_back(loop.step());
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

void measure(StepLoop& loop, const RunOptions& o, RunResult& r) {
  auto start = Clock::now();
  double cpu_start = process_cpu_seconds();
  while (true) {
    r.samples_s.push_back(loop.step());
    const size_t n = r.samples_s.size();
    if (n >= o.min_samples) {
      r.step_time = summarize(r.samples_s);
      if (r.step_time.ci_rel <= o.target_ci) break;
    }
    if (n >= o.max_iterations || seconds_since(start) >= o.max_time_s) break;
  }
  double wall = seconds_since(start);
  r.step_time = summarize(r.samples_s);
  r.target_met = r.step_time.ci_rel <= o.target_ci;
  if (!r.target_met)
    r.warnings.push_back(fmt::format(
        "95% CI half-width is {:.1f}% of the mean after {} samples, above the {:.1f}% target "
        "(budget: {:.0f} s / {} iterations)",
        100 * r.step_time.ci_rel, r.step_time.n, 100 * o.target_ci, o.max_time_s,
        o.max_iterations));
  if (wall > 0) r.cpu_utilization = (process_cpu_seconds() - cpu_start) / (wall * o.threads);
}

bool is_out_of_memory(const std::string& what) {
  return what.find("out of memory") != std::string::npos ||
         what.find("can't allocate memory") != std::string::npos ||
         what.find("Cannot allocate memory") != std::string::npos;
}

// First line of a (possibly long, multi-line) LibTorch error message.
std::string first_line(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

}  // namespace

std::string apply_threads(int threads) {
  torch::set_num_threads(threads);
  const unsigned cores = std::thread::hardware_concurrency();
  if (cores > 0 && static_cast<unsigned>(threads) > cores)
    return fmt::format(
        "--threads {} exceeds the {} logical cores of this machine; threads will "
        "time-share cores and step times will be inflated",
        threads, cores);
  return "";
}

torch::Device parse_device(const std::string& text) {
  if (text == "cpu") return torch::Device(torch::kCPU);
  if (text == "cuda" || text.rfind("cuda:", 0) == 0) {
    if (!torch::cuda::is_available())
      throw UsageError("device '" + text +
                       "' requested but this LibTorch has no usable CUDA device; use --device cpu");
    try {
      torch::Device d(text);
      if (d.has_index() && d.index() >= static_cast<int>(torch::cuda::device_count()))
        throw UsageError(fmt::format("device '{}' does not exist: {} CUDA device(s) present", text,
                                     torch::cuda::device_count()));
      return d;
    } catch (const c10::Error&) {
      throw UsageError("cannot parse device '" + text + "'; use cpu, cuda or cuda:N");
    }
  }
  throw UsageError("unknown device '" + text + "'; use cpu, cuda or cuda:N");
}

void validate_options(const RunOptions& o) {
  if (o.threads <= 0)
    throw UsageError(fmt::format("--threads must be at least 1, got {}", o.threads));
  if (!(o.target_ci > 0 && o.target_ci < 1))
    throw UsageError(fmt::format(
        "--target-ci is a fraction of the mean in (0, 1), e.g. 0.02 for 2%; got {}", o.target_ci));
  if (!(o.max_time_s > 0))
    throw UsageError(fmt::format("--max-time must be positive seconds, got {}", o.max_time_s));
  if (o.max_iterations == 0 || o.min_samples == 0)
    throw UsageError("iteration budgets must be at least 1");
  if (o.config.get_int("batch") <= 0) throw UsageError("--batch must be at least 1");
  parse_device(o.device);
}

std::string reproducer_command(const Workload& workload, const RunOptions& o) {
  std::vector<std::string> parts = {"plumb run", workload.info.name,
                                    "--mode",    mode_name(o.mode),
                                    "--batch",   std::to_string(o.config.get_int("batch")),
                                    "--threads", std::to_string(o.threads)};
  if (o.device != "cpu") parts.insert(parts.end(), {"--device", o.device});
  parts.insert(parts.end(),
               {"--seed", std::to_string(o.seed), "--target-ci", fmt::format("{}", o.target_ci),
                "--max-time", fmt::format("{}", o.max_time_s)});
  Config defaults = workload.default_config();
  for (const auto& kv : o.config.differences_from(defaults)) {
    if (kv.rfind("batch=", 0) == 0) continue;
    parts.insert(parts.end(), {"--set", kv});
  }
  return join(parts, " ");
}

RunResult run_workload(const Workload& workload, const RunOptions& o, const ProgressFn& progress) {
  validate_options(o);
  RunResult r;
  r.command = reproducer_command(workload, o);
  r.started_at = utc_now_iso8601();
  r.throughput_unit = workload.info.throughput_unit;
  auto run_start = Clock::now();
  std::string thread_warning = apply_threads(o.threads);
  if (!thread_warning.empty()) r.warnings.push_back(thread_warning);
  torch::manual_seed(o.seed);
  const torch::Device device = parse_device(o.device);

  try {
    auto model = workload.build(o.config, device);
    // Inference runs in eval mode without autograd bookkeeping, as a deployed model would.
    std::unique_ptr<c10::InferenceMode> no_autograd;
    if (o.mode == Mode::kInfer) {
      model->module().eval();
      no_autograd = std::make_unique<c10::InferenceMode>();
    } else {
      model->module().train();
    }
    StepLoop loop(*model, o, device);
    r.units_per_step = loop.units();
    warm_up(loop, o, r, progress);
    measure(loop, o, r);
    r.last_loss = loop.last_value();
    r.throughput = r.units_per_step / r.step_time.mean;
  } catch (const NonFiniteLoss& e) {
    r.status = RunStatus::kNanLoss;
    r.message =
        fmt::format("{} became {} at iteration {}", o.mode == Mode::kTrain ? "loss" : "output",
                    e.value, r.warmup_s.size() + r.samples_s.size() + 1);
  } catch (const UsageError&) {
    throw;
  } catch (const std::bad_alloc&) {
    r.status = RunStatus::kOutOfMemory;
    r.message = "out of memory (std::bad_alloc); try a smaller --batch";
  } catch (const c10::Error& e) {
    const std::string what = first_line(e.what_without_backtrace());
    r.status = is_out_of_memory(what) ? RunStatus::kOutOfMemory : RunStatus::kError;
    r.message = r.status == RunStatus::kOutOfMemory ? what + "; try a smaller --batch" : what;
  } catch (const std::exception& e) {
    r.status = RunStatus::kError;
    r.message = first_line(e.what());
  }
  if (r.status != RunStatus::kOk) {
    r.step_time = summarize(r.samples_s);
    r.throughput = std::numeric_limits<double>::quiet_NaN();  // a failed run has no rate
  }
  r.wall_seconds = seconds_since(run_start);
  return r;
}

}  // namespace plumb::run
