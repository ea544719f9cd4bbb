// plumb memory: where a step's bytes go (TBD Sec. IV-B) — weights, gradients, optimizer
// state, feature maps, workspace, input, other — at each batch size asked for, how each
// category grows per example, which layers make the feature maps, and with --memory-limit the
// largest batch whose step fits a budget: predicted from the fit, searched by measuring, and
// verified by running it under that limit. The work is jobs/memory_job.h, the output
// jobs/memory_report.h.
#include <ostream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <utility>

#include "plumb/cli/byte_size.h"
#include "plumb/cli/commands.h"
#include "plumb/cli/config_options.h"
#include "plumb/cli/job_command.h"
#include "plumb/cli/list_options.h"
#include "plumb/cli/measure_options.h"
#include "plumb/cli/phase_option.h"
#include "plumb/core/errors.h"
#include "plumb/core/execution_settings.h"
#include "plumb/jobs/memory_job.h"
#include "plumb/jobs/memory_report.h"
#include "plumb/profile/memory_profiler.h"
#include "plumb/run/runner.h"
#include "plumb/run/step_loop.h"
#include "plumb/workloads/all_workloads.h"

namespace plumb::cli {
namespace {

struct MemoryFlags {
  std::string workload;
  MeasureFlags measure;  // mode, threads, device, precision, engine, heap, seed, db, tag, json
  std::string batches;   // "" = the workload's default batch
  std::string memory_limit;
  int warmup_steps = profile::MemoryOptions{}.warmup_steps;
  size_t top = 10;
  bool rss_check = false;  // --heap return, named for what it is for here
  std::string phase;       // of a generation: prefill, decode or both
  ConfigOverrides overrides;
};

void declare_memory_options(CLI::App& cmd, MemoryFlags& flags) {
  cmd.add_option("workload", flags.workload, "Workload name (see plumb list)")->required();
  cmd.add_option("--mode", flags.measure.mode, "train or infer")->capture_default_str();
  cmd.add_option("--batch", flags.batches,
                 "Batch sizes, e.g. 1,2,4,8 (default: the workload's published batch)");
  cmd.add_option("--memory-limit", flags.memory_limit,
                 "Find the largest batch whose step fits this budget, e.g. 8GiB (verified by "
                 "running it under that limit)");
  cmd.add_option("--warmup-steps", flags.warmup_steps,
                 "Steps before the recorded one (the first makes gradients and optimizer state)")
      ->capture_default_str();
  cmd.add_option("--top", flags.top, "Layers listed by feature-map bytes")->capture_default_str();
  add_phase_option(cmd, flags.phase);
  cmd.add_flag("--rss-check", flags.rss_check,
               "Same as --heap return: glibc returns freed blocks to the kernel, so the "
               "process's resident-set growth can be compared with the tracked peak (steps run "
               "~2x slower)");
  add_measure_options(cmd, flags.measure, run::RunOptions{}.max_time_s,
                      run::RunOptions{}.max_warmup_s, SamplingOptions::kNone);
  restrict_device_to_cpu(cmd,
                         "plumb tracks LibTorch's CPU allocator, and a model on a GPU keeps its "
                         "tensors in the CUDA allocator (plumb dist --device cuda reports a GPU "
                         "worker's peak memory)");
  add_config_options(cmd, flags.overrides, BatchOption::kNone);
}

// Bad values fail before anything is measured.
jobs::MemoryJobOptions memory_job_options(MemoryFlags& flags) {
  const Workload& w = workloads::default_registry().get(flags.workload);
  const Mode mode = parse_mode(flags.measure.mode);
  const Config config = resolve_config(w, flags.overrides);
  jobs::MemoryJobOptions job;
  job.phase = parse_phase_option(flags.phase, w, config, {mode});
  job.batches = {static_cast<int>(config.get_int("batch"))};
  if (!flags.batches.empty()) job.batches = parse_positive_int_list("--batch", flags.batches);
  if (!flags.memory_limit.empty())
    job.memory_limit = parse_byte_size("--memory-limit", flags.memory_limit);
  if (flags.warmup_steps < 1)
    throw UsageError(fmt::format("--warmup-steps must be at least 1, got {}", flags.warmup_steps));
  if (flags.rss_check) flags.measure.heap = heap_policy_name(HeapPolicy::kReturn);
  std::vector<run::RunOptions> options = make_options(w, config, mode, flags.measure);
  if (options.size() != 1)
    throw UsageError(fmt::format(
        "plumb memory profiles one precision per call; --dtype {} lists {}: run it once for each",
        flags.measure.dtypes, options.size()));
  job.run = std::move(options.front());
  job.warmup_steps = flags.warmup_steps;
  return storing_per(std::move(job), flags.measure);
}

}  // namespace

void add_memory_command(CLI::App& app, int& exit_code) {
  add_job_command<MemoryFlags>(
      app, "memory",
      "Where a step's bytes go: weights, gradients, optimizer state, feature maps ...",
      declare_memory_options, [&exit_code](MemoryFlags& f) {
        const auto result = jobs::run_memory_job(memory_job_options(f), print_progress);
        if (!result.all_ok) exit_code = 1;
        print_result(
            f.measure.json, [&] { return jobs::memory_json(result, f.top); },
            [&](std::ostream& out) { jobs::print_memory(out, result, f.top); });
      });
}

}  // namespace plumb::cli
