// plumb run's and plumb suite's job: each run setting of the plan measured by the steady-state
// runner (run/runner.h), stored with its environment and every sample, and read back, so what
// the reporters print is what plumb export prints. Reporters: run_report.h.
#pragma once

#include <string>
#include <vector>

#include "plumb/core/workload.h"
#include "plumb/run/runner.h"
#include "plumb/store/results_store.h"
#include "plumb/store/run_record.h"

namespace plumb::jobs {

struct PlannedRun {
  const Workload* workload = nullptr;
  run::RunOptions options;  // validated
};

struct RunJobOptions {
  std::vector<PlannedRun> plan;  // in order
  std::string db;
  std::string tag;
};

struct RunJobResult {
  std::vector<store::StoredRun> runs;  // as read back (samples included), in plan order
  std::string db_path;
  bool all_ok = true;  // every run's status is ok
};

// Runs one setting, stores it with its environment under `tag` and returns the stored record
// as read back (what --json prints is what export prints). `progress` gets the run's
// announcement, progress lines and warnings. plumb analyze decode runs its settings through it.
store::StoredRun run_and_store(const Workload& workload, const run::RunOptions& options,
                               store::ResultsStore& db, const std::string& tag,
                               const run::ProgressFn& progress);

// Opens the store before measuring (a bad --db fails before minutes of work). `progress` gets
// each run's announcement, progress lines and warnings.
RunJobResult run_run_job(const RunJobOptions& options, const run::ProgressFn& progress);

}  // namespace plumb::jobs
