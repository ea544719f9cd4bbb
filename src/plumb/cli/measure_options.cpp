// Shared execution options (see measure_options.h).
#include "plumb/cli/measure_options.h"

#include <algorithm>

#include <fmt/format.h>

#include "plumb/core/precision.h"
#include "plumb/platform/cpu_features.h"
#include "plumb/run/runner.h"

namespace plumb::cli {

int default_threads() {
  return std::max(1, static_cast<int>(platform::allowed_cpus().size()));
}

void add_measure_options(CLI::App& cmd, MeasureFlags& f, double default_max_time,
                         double default_max_warmup_time, SamplingOptions sampling,
                         ThreadsOption threads) {
  run::RunOptions& o = f.run;
  o.max_time_s = default_max_time;
  o.max_warmup_s = default_max_warmup_time;
  o.threads = default_threads();
  if (threads == ThreadsOption::kSingle)
    cmd.add_option("--threads", o.threads,
                   "Intra-op threads (default: every CPU this process may use)")
        ->capture_default_str();
  cmd.add_option("--device", o.device, "cpu, cuda or cuda:N")->capture_default_str();
  cmd.add_option("--dtype", f.dtypes,
                 "Precision(s), comma-separated: fp32, bf16 (autocast; mixed precision in "
                 "training), fp16, int8 (static quantization, inference)")
      ->capture_default_str();
  cmd.add_option("--memory-format", f.memory_format, "contiguous or channels_last (NHWC)")
      ->capture_default_str();
  cmd.add_option("--engine", f.engine,
                 "Convolution/GEMM path: onednn (LibTorch's default) or native (its own "
                 "convolutions and OpenBLAS; setUserEnabledMkldnn(false))")
      ->capture_default_str();
  cmd.add_option("--heap", f.heap,
                 "Freed memory: keep (stays in the process, plumb's default) or return (glibc's "
                 "fixed 128 KiB thresholds: large blocks mapped and unmapped each time)")
      ->capture_default_str();
  cmd.add_option("--keep-fp32", o.keep_fp32,
                 "int8: module paths left in fp32, comma-separated (plumb precision --by layer "
                 "prints a plan)")
      ->delimiter(',')
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd.add_option("--embedding-bits", o.embedding_bits,
                 "int8: bits per code of row-wise quantized embedding bags, 8 or 4")
      ->capture_default_str();
  cmd.add_option("--seed", o.seed, "Seed for weights and synthetic data")->capture_default_str();
  if (sampling == SamplingOptions::kWith) {
    cmd.add_option("--target-ci", o.target_ci,
                   "Stop sampling when the 95% CI half-width is within this fraction of the mean")
        ->capture_default_str();
    cmd.add_option("--max-time", o.max_time_s, "Measurement budget per run, seconds")
        ->capture_default_str();
    cmd.add_option("--max-iters", o.max_iterations, "Measurement iteration budget per run")
        ->capture_default_str();
    cmd.add_option("--min-samples", o.min_samples, "Measured iterations before the CI may stop it")
        ->capture_default_str();
  }
  if (sampling != SamplingOptions::kNone) {
    cmd.add_option("--max-warmup-time", o.max_warmup_s,
                   "Warm-up cap, seconds: measure anyway (with a warning) if not steady by then")
        ->capture_default_str();
    cmd.add_option("--warmup-window", o.steady.window,
                   "Iterations per window of the steady-state test (three windows are compared)")
        ->capture_default_str();
  }
  cmd.add_option("--db", f.db, "Results database (SQLite)")->capture_default_str();
  cmd.add_option("--tag", f.tag, "Label stored with the results (e.g. a machine or library)");
  cmd.add_flag("--json", f.json, "Print one JSON document on stdout");
}

const char* const kOperatorTimesOnTheHost =
    "operators are timed on the host clock, which on a GPU times kernel launches, not kernels "
    "(time whole GPU steps with plumb run --device cuda)";

void restrict_device_to_cpu(CLI::App& cmd, const std::string& why) {
  cmd.get_option("--device")
      ->check(
          [why](const std::string& device) {
            return run::names_a_gpu(device)
                       ? fmt::format("'{}': this command runs on the CPU only: {}", device, why)
                       : std::string();
          },
          "")
      ->description("cpu only: this command's figures are the CPU's (cuda is refused, with why)");
}

std::vector<run::RunOptions> make_options(const Workload& w, const Config& config, Mode mode,
                                          const MeasureFlags& f) {
  std::vector<run::RunOptions> out;
  const MemoryFormat format = parse_memory_format(f.memory_format);
  const Engine engine = parse_engine(f.engine);
  const HeapPolicy heap = parse_heap_policy(f.heap);
  for (Dtype dtype : parse_dtype_list(f.dtypes)) {
    run::RunOptions o = f.run;
    o.workload = w.info.name;
    o.mode = mode;
    o.config = config;
    o.dtype = dtype;
    o.memory_format = format;
    o.engine = engine;
    o.heap = heap;
    run::validate_options(o);
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace plumb::cli
