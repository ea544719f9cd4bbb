// plumb precision: what each precision buys (speed against fp32, same steady-state method, with
// the ratio's bootstrap interval) and what it costs (output error against fp32 on the same
// inputs and weights), per workload; with --by layer, the error each int8 layer adds alone and
// the selective-quantization plan that stays within --max-error, measured. The command line
// parses and prints; the work is jobs/precision_job.h, its output jobs/precision_report.h.
#include <ostream>
#include <string>
#include <utility>

#include "plumb/cli/commands.h"
#include "plumb/cli/config_options.h"
#include "plumb/cli/job_command.h"
#include "plumb/cli/measure_options.h"
#include "plumb/core/errors.h"
#include "plumb/jobs/precision_job.h"
#include "plumb/jobs/precision_report.h"
#include "plumb/workloads/all_workloads.h"

namespace plumb::cli {
namespace {

struct PrecisionFlags {
  std::string workload;
  MeasureFlags measure;
  std::string by = "dtype";
  double max_error = 0.02;
  size_t max_plan_steps = 8;
  ConfigOverrides overrides;
};

void declare_precision_options(CLI::App& cmd, PrecisionFlags& f) {
  f.measure.mode = "infer";
  f.measure.dtypes = "fp32,bf16,fp16,int8";
  cmd.add_option("workload", f.workload, "Workload name (see plumb list)")->required();
  cmd.add_option("--mode", f.measure.mode, "infer (speed and error) or train (speed)")
      ->capture_default_str();
  add_config_options(cmd, f.overrides);
  add_measure_options(cmd, f.measure, 30, 30);
  // --dtypes reads better for a comparison; --dtype (from the shared options) means the same.
  cmd.add_option("--dtypes", f.measure.dtypes, "Precisions to compare with fp32")
      ->capture_default_str();
  cmd.add_option("--by", f.by,
                 "dtype, or layer: also the error each int8 layer adds alone and the "
                 "selective-quantization plan within --max-error")
      ->capture_default_str();
  cmd.add_option("--max-error", f.max_error,
                 "Output error against fp32 the int8 plan must stay within (relative L2; for "
                 "token outputs the share of tokens that differ)")
      ->capture_default_str();
}

jobs::PrecisionJobOptions precision_job_options(const PrecisionFlags& f) {
  jobs::PrecisionJobOptions o;
  o.workload = &workloads::default_registry().get(f.workload);
  o.mode = parse_mode(f.measure.mode);
  if (f.by != "dtype" && f.by != "layer")
    throw UsageError("--by must be dtype or layer, got '" + f.by + "'");
  if (!(f.max_error > 0)) throw UsageError("--max-error must be a positive fraction");
  if (f.by == "layer" && o.mode != Mode::kInfer)
    throw UsageError("--by layer measures output error, so it needs --mode infer");
  o.config = resolve_config(*o.workload, f.overrides);
  o.plan = make_options(*o.workload, o.config, o.mode, f.measure);
  o.by_layer = f.by == "layer";
  o.max_error = f.max_error;
  o.max_plan_steps = f.max_plan_steps;
  return storing_per(std::move(o), f.measure);
}

}  // namespace

void add_precision_command(CLI::App& app, int& exit_code) {
  add_job_command<PrecisionFlags>(
      app, "precision",
      "Speed and output error of each precision against fp32 (same inputs, weights)",
      declare_precision_options, [&exit_code](const PrecisionFlags& f) {
        const auto result = jobs::run_precision_job(precision_job_options(f));
        if (result.runs_failed) exit_code = 1;
        print_result(
            f.measure.json, [&] { return jobs::precision_json(result); },
            [&](std::ostream& out) {
              jobs::print_precision(result, out);
              // The text says when the plan is not within the budget, and so does the exit
              // status.
              if (result.by_layer && !(result.plan && result.plan->search.met)) exit_code = 1;
            });
      });
}

}  // namespace plumb::cli
