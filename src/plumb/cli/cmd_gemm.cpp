// plumb gemm: parses the options of the GEMM census (jobs/gemm_job.h: the shapes the workloads
// run, against a square one, measured per precision), runs the job and prints its result.
#include <ostream>
#include <utility>

#include "plumb/cli/commands.h"
#include "plumb/cli/config_options.h"
#include "plumb/cli/job_command.h"
#include "plumb/cli/list_options.h"
#include "plumb/cli/measure_options.h"
#include "plumb/cli/workload_selection.h"
#include "plumb/core/dtype.h"
#include "plumb/core/errors.h"
#include "plumb/jobs/gemm_job.h"
#include "plumb/jobs/gemm_report.h"

namespace plumb::cli {
namespace {

struct GemmFlags {
  MeasureFlags measure;
  std::vector<std::string> workloads;
  std::string suites;
  std::string gemm_dtypes = "fp32,bf16,fp16,int8";
  size_t top = 12;
  double seconds = 0.2;
  int64_t square = 1024;
  bool from_db = false;
  int steps = 1;
  platform::Acc16Options acc16;
  ConfigOverrides overrides;
};

void declare_gemm_options(CLI::App& cmd, GemmFlags& f) {
  f.measure.mode = "infer";
  cmd.add_option("workloads", f.workloads, "Workload names (see plumb list)");
  cmd.add_option("--suite", f.suites, "Every workload of these suites, e.g. fathom,tbd");
  cmd.add_option("--mode", f.measure.mode, "infer, train, or train,infer")->capture_default_str();
  add_config_options(cmd, f.overrides);
  cmd.add_flag("--suite-size", f.overrides.suite_size,
               "Profile the batch and sizes plumb suite measures (then --batch/--set on top)");
  add_measure_options(cmd, f.measure, 60, 20, SamplingOptions::kWithout);
  restrict_device_to_cpu(cmd, "the shapes are timed with the CPU's GEMM libraries");
  cmd.add_option("--dtypes", f.gemm_dtypes, "Precisions each GEMM shape is measured in")
      ->capture_default_str();
  cmd.add_option("--top", f.top, "Measure the K shapes with the largest share of time")
      ->capture_default_str();
  cmd.add_option("--seconds", f.seconds, "Timing budget per shape and precision")
      ->capture_default_str();
  cmd.add_option("--square", f.square, "Side of the square reference GEMM (M = N = K)")
      ->capture_default_str();
  cmd.add_option("--steps", f.steps, "Steps observed per profile pass")->capture_default_str();
  cmd.add_flag("--from-db", f.from_db,
               "Take the newest stored profile of each workload and mode when there is one");
  cmd.add_option("--acc16-spill", f.acc16.spill_every,
                 "int8 acc16 emulation: K elements between spills of the 16-bit sums")
      ->capture_default_str();
  cmd.add_option("--outlier-bits", f.acc16.main_bits,
                 "int8 acc16 emulation: bits of the weights' main part (the rest are outliers)")
      ->capture_default_str();
}

// Checks the flags and builds the job's options; throws UsageError before anything runs.
jobs::GemmJobOptions gemm_job_options(const GemmFlags& f) {
  const std::vector<const Workload*> chosen = chosen_workloads(f.workloads, f.suites);
  std::vector<Mode> modes;
  for (const auto& m : parse_name_list("--mode", f.measure.mode)) modes.push_back(parse_mode(m));
  jobs::GemmJobOptions o;
  for (Dtype d : parse_dtype_list(f.gemm_dtypes)) o.dtypes.emplace_back(dtype_name(d));
  if (f.top < 1) throw UsageError("--top must be at least 1");
  if (!(f.seconds > 0)) throw UsageError("--seconds must be positive");
  if (f.square < 16 || f.square > 8192) throw UsageError("--square must be 16 to 8192");
  if (f.steps < 1) throw UsageError("--steps must be at least 1");
  if (f.acc16.spill_every < 2 || f.acc16.spill_every % 2 != 0)
    throw UsageError("--acc16-spill must be an even number of K elements, at least 2");
  if (f.acc16.main_bits < 2 || f.acc16.main_bits > 8)
    throw UsageError("--outlier-bits must be 2 to 8");
  // Validate every workload's options before the first pass starts.
  for (const Workload* w : chosen) {
    const Config config = resolve_config(*w, f.overrides);
    for (Mode m : modes) o.plan.push_back(make_options(*w, config, m, f.measure).front());
  }
  o.top = f.top;
  o.seconds = f.seconds;
  o.square = f.square;
  o.from_db = f.from_db;
  o.steps = f.steps;
  o.acc16 = f.acc16;
  o.acc16.seed = f.measure.run.seed;
  o.threads = f.measure.run.threads;
  return storing_per(std::move(o), f.measure);
}

}  // namespace

void add_gemm_command(CLI::App& app, int& exit_code) {
  add_job_command<GemmFlags>(
      app, "gemm", "The GEMM shapes workloads run, against square ones, measured per precision",
      declare_gemm_options, [&exit_code](const GemmFlags& f) {
        const auto result = jobs::run_gemm_job(gemm_job_options(f), print_progress);
        if (result.profile_failed) exit_code = 1;
        print_result(
            f.measure.json, [&] { return jobs::gemm_json(result); },
            [&](std::ostream& out) { jobs::print_gemm(result, out); });
      });
}

}  // namespace plumb::cli
