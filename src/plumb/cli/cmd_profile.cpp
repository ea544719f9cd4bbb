// plumb profile: operator-level profile of a workload (Fathom Sec. V): where the step's time
// goes by operator, category or layer, with FLOPs, bytes, rates and intensity per row; the
// cumulative "few ops dominate" count; training vs inference when both modes are asked for;
// and per-category thread scaling with Amdahl fits when several thread counts are. The work is
// jobs/profile_job.h, the output jobs/profile_report.h.
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "plumb/analysis/breakdown.h"
#include "plumb/cli/commands.h"
#include "plumb/cli/config_options.h"
#include "plumb/cli/job_command.h"
#include "plumb/cli/list_options.h"
#include "plumb/cli/measure_options.h"
#include "plumb/cli/phase_option.h"
#include "plumb/core/errors.h"
#include "plumb/jobs/profile_job.h"
#include "plumb/jobs/profile_report.h"
#include "plumb/run/runner.h"
#include "plumb/run/step_loop.h"
#include "plumb/workloads/all_workloads.h"

namespace plumb::cli {
namespace {

struct ProfileFlags {
  std::string workload;
  MeasureFlags measure;
  std::string threads;  // default: every CPU this process may use
  std::string by = "category";
  size_t top = 0;  // 0: all rows (JSON) / 15 rows (table)
  int steps = 3;
  std::string trace;  // Chrome trace-event file of the last observed step ("" = none)
  std::string phase;  // of a generation: prefill, decode or both
  ConfigOverrides overrides;
};

void declare_profile_options(CLI::App& cmd, ProfileFlags& flags) {
  cmd.add_option("workload", flags.workload, "Workload name (see plumb list)")->required();
  cmd.add_option("--mode", flags.measure.mode, "train, infer, or train,infer to compare")
      ->capture_default_str();
  flags.threads = std::to_string(default_threads());
  cmd.add_option("--threads", flags.threads,
                 "Thread counts, e.g. 1,2 (scaling fits; default: every CPU this process may use)")
      ->capture_default_str();
  cmd.add_option("--by", flags.by, "Rows by op, category or layer")->capture_default_str();
  cmd.add_option("--top", flags.top, "Show only the K most expensive rows");
  cmd.add_option("--steps", flags.steps, "Steps observed after warm-up")->capture_default_str();
  cmd.add_option("--trace", flags.trace,
                 "Write the last observed step as a Chrome trace-event file (Perfetto, "
                 "chrome://tracing); one file per mode and thread count");
  add_phase_option(cmd, flags.phase);
  add_config_options(cmd, flags.overrides);
  cmd.add_flag("--suite-size", flags.overrides.suite_size,
               "Profile the batch and sizes plumb suite measures (then --batch/--set on top)");
  add_measure_options(cmd, flags.measure, 60, 30, SamplingOptions::kWithout, ThreadsOption::kNone);
  restrict_device_to_cpu(cmd, kOperatorTimesOnTheHost);
}

// One pass per mode and thread count; bad values fail before anything is measured.
jobs::ProfileJobOptions profile_job_options(const ProfileFlags& flags) {
  const Workload& w = workloads::default_registry().get(flags.workload);
  const auto thread_list = parse_positive_int_list("--threads", flags.threads);
  jobs::ProfileJobOptions job;
  for (const auto& m : parse_name_list("--mode", flags.measure.mode))
    job.modes.push_back(parse_mode(m));
  if (flags.steps < 1) throw UsageError("--steps must be at least 1");
  const Config config = resolve_config(w, flags.overrides);
  job.phase = parse_phase_option(flags.phase, w, config, job.modes);
  for (Mode m : job.modes) {
    for (int t : thread_list) {
      for (auto& o : make_options(w, config, m, flags.measure)) {
        o.threads = t;
        run::validate_options(o);
        job.passes.push_back(std::move(o));
      }
    }
  }
  job.steps = flags.steps;
  job.trace = flags.trace;
  return storing_per(std::move(job), flags.measure);
}

}  // namespace

void add_profile_command(CLI::App& app, int& exit_code) {
  add_job_command<ProfileFlags>(
      app, "profile", "Operator-level profile: where a step's time goes", declare_profile_options,
      [&exit_code](const ProfileFlags& f) {
        const jobs::ProfileView view{analysis::parse_group_by(f.by), f.by, f.top, {}};
        const auto result = jobs::run_profile_job(profile_job_options(f), print_progress);
        if (!result.all_ok) exit_code = 1;
        print_result(
            f.measure.json, [&] { return jobs::profile_json(result, view); },
            [&](std::ostream& out) { jobs::print_profile(out, result, view); });
      });
}

}  // namespace plumb::cli
