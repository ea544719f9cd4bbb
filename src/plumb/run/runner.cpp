// Steady-state runner (see runner.h).
#include "plumb/run/runner.h"

#include <dlfcn.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <thread>

#include <fmt/format.h>

#include "plumb/core/errors.h"
#include "plumb/core/kill_point.h"
#include "plumb/core/text.h"
#include "plumb/run/generation_timing.h"
#include "plumb/run/heap_policy.h"
#include "plumb/run/step_loop.h"

namespace plumb::run {
namespace {

using Clock = std::chrono::steady_clock;

void measure(StepLoop& loop, const RunOptions& o, RunResult& r) {
  auto start = Clock::now();
  double cpu_start = process_cpu_seconds();
  if (loop.generative() != nullptr) r.generation = generation_times_for(*loop.generative());
  while (true) {
    r.samples_s.push_back(loop.step());
    if (r.generation) add_generation(*r.generation, *loop.last_generation());
    kill_point("sampling");
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
  // One sample has no spread, hence no interval (its ci_rel is NaN): said in words.
  if (!r.target_met && r.step_time.n < 2)
    r.warnings.push_back(fmt::format(
        "one step-time sample in the budget ({:.0f} s / {} iterations): no 95% CI, so the {:.1f}% "
        "target is not met",
        o.max_time_s, o.max_iterations, 100 * o.target_ci));
  else if (!r.target_met)
    r.warnings.push_back(fmt::format(
        "95% CI half-width is {:.1f}% of the mean after {} samples, above the {:.1f}% target "
        "(budget: {:.0f} s / {} iterations)",
        100 * r.step_time.ci_rel, r.step_time.n, 100 * o.target_ci, o.max_time_s,
        o.max_iterations));
  if (wall > 0) r.cpu_utilization = (process_cpu_seconds() - cpu_start) / (wall * o.threads);
  if (r.generation) summarize_generation(*r.generation);
}

}  // namespace

std::string apply_threads(int threads) {
  torch::set_num_threads(threads);
  // OpenBLAS sizes its threads apart from torch::set_num_threads: its pthreads build keeps a
  // pool of its own (without this, "--threads 1" still runs GEMMs on every core), and its
  // OpenMP build caps its parallel regions at this count too.
  using SetThreads = void (*)(int);
  if (auto set_blas = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads")))
    set_blas(threads);
  const unsigned cores = std::thread::hardware_concurrency();
  if (cores > 0 && static_cast<unsigned>(threads) > cores)
    return fmt::format(
        "--threads {} exceeds the {} logical cores of this machine; threads will "
        "time-share cores and step times will be inflated",
        threads, cores);
  return "";
}

bool names_a_gpu(const std::string& text) {
  return text == "cuda" || text.rfind("cuda:", 0) == 0;
}

torch::Device parse_device(const std::string& text) {
  if (text == "cpu") return torch::Device(torch::kCPU);
  if (names_a_gpu(text)) {
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
    throw UsageError("--max-iters and --min-samples must be at least 1");
  if (!(o.max_warmup_s > 0))
    throw UsageError(
        fmt::format("--max-warmup-time must be positive seconds, got {}", o.max_warmup_s));
  if (o.steady.window < 2)
    throw UsageError(fmt::format("--warmup-window must be at least 2, got {}", o.steady.window));
  if (o.config.get_int("batch") <= 0) throw UsageError("--batch must be at least 1");
  if (o.embedding_bits != 8 && o.embedding_bits != 4)
    throw UsageError("--embedding-bits must be 8 or 4");
  parse_device(o.device);
}

RunResult run_workload(const Workload& workload, const RunOptions& o, const ProgressFn& progress) {
  validate_options(o);
  RunResult r;
  r.command = reproducer_command(workload, o);
  r.started_at = utc_now_iso8601();
  r.throughput_unit = workload.info.throughput_unit;
  auto run_start = Clock::now();

  const double injected_delay_s = injected_step_delay_s();
  r.injected_delay_ms = 1000 * injected_delay_s;
  // Never silent: a run slowed on purpose says so in its stored warnings.
  if (injected_delay_s > 0)
    r.warnings.push_back(fmt::format(
        "{} adds {:g} ms to every step: a testing aid (docs/compare.md), these timings are not "
        "the workload's",
        kInjectDelayVariable, 1000 * injected_delay_s));
  apply_heap_policy(o.heap, r.warnings);
  with_model(workload, o, r, [&](StepLoop& loop) {
    loop.set_injected_delay(injected_delay_s);
    r.units_per_step = loop.units();
    warm_up(loop, o, r, progress);
    measure(loop, o, r);
    r.last_loss = loop.last_value();
    r.throughput = r.units_per_step / r.step_time.mean;
  });
  if (r.status != RunStatus::kOk) {
    r.step_time = summarize(r.samples_s);
    r.throughput = std::numeric_limits<double>::quiet_NaN();  // a failed run has no rate
  }
  r.wall_seconds = seconds_since(run_start);
  return r;
}

}  // namespace plumb::run
