// plumb analyze fusion: parses the options of fusion mining and its realize step
// (jobs/fusion_job.h: patterns mined from stored operator graphs, projected and realized
// savings), runs the job and prints its result.
#include <ostream>

#include <fmt/format.h>
#include <utility>

#include "plumb/analysis/profile_roofline.h"
#include "plumb/cli/commands.h"
#include "plumb/cli/config_options.h"
#include "plumb/cli/job_command.h"
#include "plumb/cli/measure_options.h"
#include "plumb/cli/workload_selection.h"
#include "plumb/core/errors.h"
#include "plumb/core/mode.h"
#include "plumb/jobs/fusion_job.h"
#include "plumb/jobs/fusion_report.h"

namespace plumb::cli {
namespace {

struct FusionFlags {
  MeasureFlags measure;
  std::vector<std::string> workloads;
  std::string suites;
  int top = 10;
  int steps = 3;
  analysis::FusionOptions mining;
  // Fused kernels are library kernels: the best library GEMM is the compute roof they can reach.
  std::string peak = "gemm";
  bool profile = false;     // profile now even with a stored profile
  bool no_realize = false;  // skip the fused-kernel checks
  double check_seconds = 1.0;
  ConfigOverrides overrides;
};

void declare_fusion_options(CLI::App& cmd, FusionFlags& f) {
  f.measure.mode = "infer";
  cmd.add_option("workloads", f.workloads, "Workload names (see plumb list)");
  cmd.add_option("--suite", f.suites, "Every workload of these suites, e.g. inference");
  cmd.add_option("--mode", f.measure.mode, "infer or train")->capture_default_str();
  cmd.add_option("--top", f.top, "Patterns shown (and realized) per workload and for the suite")
      ->capture_default_str();
  cmd.add_option("--max-nodes", f.mining.max_nodes, "Largest subgraph mined, in operators")
      ->capture_default_str();
  cmd.add_option("--min-count", f.mining.min_count,
                 "Occurrences per step for a pattern to count as frequent")
      ->capture_default_str();
  cmd.add_option("--max-fusible-degree", f.mining.max_fusible_degree,
                 "Nodes with more fusible neighbours than this take part in no pattern")
      ->capture_default_str();
  cmd.add_option("--peak", f.peak, "Compute roof: instruction or gemm")->capture_default_str();
  cmd.add_flag("--profile", f.profile, "Profile the workloads now even when a profile is stored");
  cmd.add_option("--steps", f.steps, "Steps observed when profiling")->capture_default_str();
  cmd.add_flag("--no-realize", f.no_realize, "Skip timing fused kernels against unfused ones");
  cmd.add_option("--check-seconds", f.check_seconds, "Timing budget of one fused-kernel check")
      ->capture_default_str();
  add_config_options(cmd, f.overrides);
  add_measure_options(cmd, f.measure, 60, 30, SamplingOptions::kWithout);
  restrict_device_to_cpu(cmd, fmt::format("the projections use the CPU's roofs, the fused kernels "
                                          "are timed on the CPU, and {}",
                                          kOperatorTimesOnTheHost));
}

// Checks the flags and builds the job's options; throws UsageError before anything runs.
jobs::FusionJobOptions fusion_job_options(const FusionFlags& f) {
  if (f.top < 1) throw UsageError("--top must be at least 1");
  if (f.mining.max_nodes < 2 || f.mining.max_nodes > 6)
    throw UsageError("--max-nodes must be 2 to 6");
  if (f.mining.min_count < 1) throw UsageError("--min-count must be at least 1");
  if (f.mining.max_fusible_degree < 1) throw UsageError("--max-fusible-degree must be at least 1");
  if (f.steps < 1) throw UsageError("--steps must be at least 1");
  if (!(f.check_seconds > 0)) throw UsageError("--check-seconds must be positive");
  jobs::FusionJobOptions o;
  o.peak_kind = analysis::parse_peak_kind(f.peak);
  const Mode mode = parse_mode(f.measure.mode);
  for (const Workload* w : chosen_workloads(f.workloads, f.suites)) {
    const auto options = make_options(*w, resolve_config(*w, f.overrides), mode, f.measure);
    if (options.size() != 1) throw UsageError("fusion mining takes one --dtype");
    o.plan.push_back(options.front());
  }
  o.mode = f.measure.mode;
  o.top = f.top;
  o.steps = f.steps;
  o.mining = f.mining;
  o.peak = f.peak;
  o.profile = f.profile;
  o.no_realize = f.no_realize;
  o.check_seconds = f.check_seconds;
  return storing_per(std::move(o), f.measure);
}

}  // namespace

void add_analyze_fusion_command(CLI::App& analyze, int& exit_code) {
  add_job_command<FusionFlags>(
      analyze, "fusion",
      "Fusion opportunities mined from stored operator graphs: projected and realized savings",
      declare_fusion_options, [&exit_code](const FusionFlags& f) {
        const auto result = jobs::run_fusion_job(fusion_job_options(f), print_progress);
        if (result.profile_failed) exit_code = 1;
        print_result(
            f.measure.json, [&] { return jobs::fusion_json(result); },
            [&](std::ostream& out) { jobs::print_fusion(result, out); });
      });
}

}  // namespace plumb::cli
