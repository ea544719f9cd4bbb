// plumb roofline: a workload's operators or layers, and its whole step, placed on this
// machine's measured roofs (ParaDnn, Facebook DL inference): FLOPs, bytes, intensity,
// achieved FLOP/s, the attainable roof at the memory level the data fits, what bounds each,
// and FLOP utilisation (TBD eq. 2). The work is jobs/roofline_job.h, the output
// jobs/roofline_report.h.
#include <iostream>
#include <string>

#include <fmt/format.h>
#include <utility>

#include "plumb/analysis/breakdown.h"
#include "plumb/analysis/profile_roofline.h"
#include "plumb/cli/commands.h"
#include "plumb/cli/config_options.h"
#include "plumb/cli/job_command.h"
#include "plumb/cli/measure_options.h"
#include "plumb/cli/phase_option.h"
#include "plumb/core/errors.h"
#include "plumb/jobs/roofline_job.h"
#include "plumb/jobs/roofline_report.h"
#include "plumb/run/step_loop.h"
#include "plumb/workloads/all_workloads.h"

namespace plumb::cli {
namespace {

struct RooflineFlags {
  std::string workload;
  MeasureFlags measure;
  std::string by = "layer";
  std::string peak = "instruction";
  size_t top = 0;
  int steps = 3;
  bool refresh_probe = false;
  std::string phase;  // of a generation: prefill, decode or both
  ConfigOverrides overrides;
};

void declare_roofline_options(CLI::App& cmd, RooflineFlags& f) {
  cmd.add_option("workload", f.workload, "Workload name (see plumb list)")->required();
  cmd.add_option("--mode", f.measure.mode, "train or infer")->capture_default_str();
  cmd.add_option("--by", f.by, "Rows by op or layer")->capture_default_str();
  cmd.add_option("--peak", f.peak,
                 "Compute roof: instruction (the machine's peak) or gemm (the best library GEMM)")
      ->capture_default_str();
  cmd.add_option("--top", f.top, "Show only the K most expensive rows");
  cmd.add_option("--steps", f.steps, "Steps observed after warm-up")->capture_default_str();
  cmd.add_flag("--refresh-probe", f.refresh_probe, "Measure the machine again first");
  add_phase_option(cmd, f.phase);
  add_config_options(cmd, f.overrides);
  add_measure_options(cmd, f.measure, 60, 30, SamplingOptions::kWithout, ThreadsOption::kSingle);
  restrict_device_to_cpu(cmd,
                         fmt::format("the roofs are the CPU's and {}", kOperatorTimesOnTheHost));
}

// Bad values fail before anything is measured.
jobs::RooflineJobOptions roofline_job_options(const RooflineFlags& f) {
  const Workload& w = workloads::default_registry().get(f.workload);
  jobs::RooflineJobOptions job;
  job.by = analysis::parse_group_by(f.by);
  if (job.by == analysis::GroupBy::kCategory)
    throw UsageError("--by must be op or layer for a roofline");
  job.peak = analysis::parse_peak_kind(f.peak);
  if (f.steps < 1) throw UsageError("--steps must be at least 1");
  const Config config = resolve_config(w, f.overrides);
  const Mode mode = parse_mode(f.measure.mode);
  job.phase = parse_phase_option(f.phase, w, config, {mode});
  const auto plan = make_options(w, config, mode, f.measure);
  if (plan.size() != 1) throw UsageError("a roofline takes one --dtype; run it once per dtype");
  job.run = plan.front();
  job.steps = f.steps;
  job.refresh_probe = f.refresh_probe;
  return storing_per(std::move(job), f.measure);
}

}  // namespace

void add_roofline_command(CLI::App& app, int& exit_code) {
  add_job_command<RooflineFlags>(
      app, "roofline", "Place a workload's operators or layers on this machine's measured roofs",
      declare_roofline_options, [&exit_code](const RooflineFlags& f) {
        const auto result = jobs::run_roofline_job(roofline_job_options(f), print_progress);
        if (result.status != run::RunStatus::kOk) {
          exit_code = 1;
          std::cerr << "profile failed (" << run::status_name(result.status)
                    << "): " << result.message << '\n';
          return;
        }
        const jobs::RooflineView view{f.by, f.top};
        print_result(
            f.measure.json, [&] { return jobs::roofline_json(result, view); },
            [&](std::ostream& out) { jobs::print_roofline(out, result, view); });
      });
}

}  // namespace plumb::cli
