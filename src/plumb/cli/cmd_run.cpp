// plumb run (one workload, one mode) and plumb suite (every workload of a suite, both modes):
// options -> jobs/run_job (measure with the steady-state runner, store every sample) -> a table
// or JSON (jobs/run_report).
#include <memory>
#include <ostream>

#include "plumb/cli/commands.h"
#include "plumb/cli/config_options.h"
#include "plumb/cli/job_command.h"
#include "plumb/cli/measure_options.h"
#include "plumb/core/text.h"
#include "plumb/jobs/run_job.h"
#include "plumb/jobs/run_report.h"
#include "plumb/workloads/all_workloads.h"

namespace plumb::cli {
namespace {

void add_plumb_run_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("run", "Measure one workload in one mode");
  auto name = std::make_shared<std::string>();
  auto flags = std::make_shared<MeasureFlags>();
  auto overrides = std::make_shared<ConfigOverrides>();
  cmd->add_option("workload", *name, "Workload name (see plumb list)")->required();
  cmd->add_option("--mode", flags->mode, "train or infer")->capture_default_str();
  add_config_options(*cmd, *overrides);
  add_measure_options(*cmd, *flags, 60, 60);
  cmd->callback([name, flags, overrides, &exit_code] {
    const Workload& w = workloads::default_registry().get(*name);
    const Mode mode = parse_mode(flags->mode);
    jobs::RunJobOptions job{{}, flags->db, flags->tag};
    for (auto& o : make_options(w, resolve_config(w, *overrides), mode, *flags))
      job.plan.push_back({&w, std::move(o)});
    const jobs::RunJobResult result = jobs::run_run_job(job, print_progress);
    if (!result.all_ok) exit_code = 1;
    print_result(
        flags->json, [&] { return jobs::run_job_json(result, jobs::RunJson::kRun); },
        [&](std::ostream& out) { jobs::print_runs(out, result); });
  });
}

void add_plumb_suite_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "suite", "Measure every workload (or one suite) in train and infer at CPU-friendly batches");
  auto suite = std::make_shared<std::string>();
  auto modes = std::make_shared<std::string>("train,infer");
  auto flags = std::make_shared<MeasureFlags>();
  cmd->add_option("--suite", *suite,
                  "Only these suites, comma-separated: fathom,tbd (default: every workload)");
  cmd->add_option("--modes", *modes, "Comma-separated modes")->capture_default_str();
  add_measure_options(*cmd, *flags, 20, 30);
  cmd->callback([suite, modes, flags, &exit_code] {
    const auto list = workloads::default_registry().list(*suite);
    std::vector<Mode> mode_list;
    for (const auto& m : split(*modes, ',')) mode_list.push_back(parse_mode(m));
    // Validate everything up front so a typo fails before the first minute of measuring.
    jobs::RunJobOptions job{{}, flags->db, flags->tag};
    for (const auto* w : list)
      for (Mode m : mode_list) {
        if (m == Mode::kTrain && !w->info.train_by_default) continue;  // e.g. 32x48d
        for (auto& o : make_options(*w, suite_config(*w), m, *flags))
          job.plan.push_back({w, std::move(o)});
      }
    const jobs::RunJobResult result = jobs::run_run_job(job, print_progress);
    if (!result.all_ok) exit_code = 1;
    print_result(
        flags->json, [&] { return jobs::run_job_json(result, jobs::RunJson::kSuite); },
        [&](std::ostream& out) { jobs::print_suite(out, result, list); });
  });
}

}  // namespace

void add_run_commands(CLI::App& app, int& exit_code) {
  add_plumb_run_command(app, exit_code);
  add_plumb_suite_command(app, exit_code);
}

}  // namespace plumb::cli
