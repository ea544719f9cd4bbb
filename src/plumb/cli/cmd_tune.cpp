// plumb tune: how much faster a workload runs on this machine than its stock configuration, and
// which change bought what (jobs/tune_job.h does the work; jobs/tune_report.h prints it). Exit 1
// when no configuration meets the error budget or latency bound (the closest is reported), 2
// for bad input. Method and figures: docs/tuning.md.
#include <cmath>
#include <ostream>

#include <fmt/format.h>

#include "plumb/cli/commands.h"
#include "plumb/cli/config_options.h"
#include "plumb/cli/duration_text.h"
#include "plumb/cli/job_command.h"
#include "plumb/cli/measure_options.h"
#include "plumb/core/errors.h"
#include "plumb/jobs/emulated_precisions.h"
#include "plumb/jobs/tune_job.h"
#include "plumb/jobs/tune_report.h"
#include "plumb/store/results_store.h"
#include "plumb/store/tune_record.h"
#include "plumb/workloads/all_workloads.h"

namespace plumb::cli {
namespace {

struct TuneFlags {
  std::string workload;
  MeasureFlags measure;
  ConfigOverrides overrides;
  std::string budget = "10m";
  double max_error = 0.02;
  std::string dtypes;  // "": every precision the mode can run
  std::string latency_bound;
  size_t replicates = 3;
};

void declare_tune_options(CLI::App& cmd, TuneFlags& f) {
  cmd.add_option("workload", f.workload, "Workload name (see plumb list)")->required();
  cmd.add_option("--mode", f.measure.mode, "train or infer")->capture_default_str();
  cmd.add_option("--budget", f.budget, "Time the search may take, e.g. 5m or 300s")
      ->capture_default_str();
  cmd.add_option("--max-error", f.max_error,
                 "Largest output error against fp32 a precision may add: relative L2 (the share "
                 "of tokens that differ for token outputs)")
      ->capture_default_str();
  cmd.add_option("--dtypes", f.dtypes,
                 "Precisions the search may use (default: fp32,bf16,fp16,int8 in inference, "
                 "fp32,bf16 in training)");
  cmd.add_option("--latency-bound", f.latency_bound,
                 "Largest mean step time, e.g. 50ms: the batch is searched within it");
  cmd.add_option("--replicates", f.replicates,
                 "Steady-state runs each of stock and best (alternately)")
      ->capture_default_str();
  add_config_options(cmd, f.overrides);
  add_measure_options(cmd, f.measure, 20, 30);
}

// The job's options from the flags; bad input is a UsageError before anything runs.
jobs::TuneOptions tune_options(const TuneFlags& f) {
  jobs::TuneOptions o;
  o.workload = &workloads::default_registry().get(f.workload);
  const Mode mode = parse_mode(f.measure.mode);
  o.budget_s = parse_duration_s("--budget", f.budget);
  o.latency_bound_s =
      f.latency_bound.empty() ? 0 : parse_duration_s("--latency-bound", f.latency_bound);
  if (!(f.max_error >= 0) || !std::isfinite(f.max_error))
    throw UsageError(
        fmt::format("--max-error is an output error, 0 or more (0.02 = 2%), got {}", f.max_error));
  o.max_error = f.max_error;
  if (f.replicates < 1) throw UsageError("--replicates must be at least 1");
  o.replicates = f.replicates;
  const Config config = resolve_config(*o.workload, f.overrides);
  const auto plan = make_options(*o.workload, config, mode, f.measure);
  if (plan.size() != 1)
    throw UsageError(
        "--dtype sets the stock precision, one of them; --dtypes lists what the search may use");
  o.stock = plan.front();
  o.candidates = jobs::tune_candidate_dtypes(f.dtypes, mode);
  o.tag = f.measure.tag;
  return o;
}

}  // namespace

void add_tune_command(CLI::App& app, int& exit_code) {
  add_job_command<TuneFlags>(
      app, "tune",
      "How much faster a workload runs than its stock configuration, and what gets it there",
      declare_tune_options, [&exit_code](const TuneFlags& f) {
        jobs::TuneOptions options = tune_options(f);
        auto db = store::ResultsStore::open(f.measure.db);
        jobs::warn_emulated_precisions(*db, options.candidates, options.stock.threads);
        const store::StoredTuneSession session = jobs::run_tune(options, *db);
        print_result(
            f.measure.json, [&] { return jobs::tune_json(session); },
            [&](std::ostream& out) {
              jobs::print_tune_text(session, out);
              out << "stored in " << f.measure.db << '\n';
            });
        if (!session.found) exit_code = 1;
      });
}

}  // namespace plumb::cli
