// What plumb precision and plumb characterize share to measure a precision against fp32: a
// timed, stored run; the throughput ratio with its bootstrap interval; the stored comparison
// record (speed and output error).
#pragma once

#include <string>

#include "plumb/analysis/run_comparison.h"
#include "plumb/core/workload.h"
#include "plumb/run/output_error.h"
#include "plumb/run/runner.h"
#include "plumb/store/results_store.h"
#include "plumb/store/run_record.h"

namespace plumb::jobs {

// Runs `o` to steady state with progress on stderr, stores it with `tag`, and reads it back
// with its samples.
store::StoredRun time_and_store(const Workload& w, const run::RunOptions& o,
                                store::ResultsStore& db, const std::string& tag);

// Throughput of `other` over `fp32` (same steady-state samples method as plumb compare).
analysis::ThroughputComparison speed_against(const store::StoredRun& fp32,
                                             const store::StoredRun& other);

// Stores what `run` buys and costs against `fp32`: the speed, and the output error when
// measured (NaN fields otherwise, with `note` saying why).
void save_precision_comparison(store::ResultsStore& db, const store::StoredRun& run,
                               const store::StoredRun& fp32,
                               const analysis::ThroughputComparison& speed, bool error_measured,
                               const run::OutputError& error, const std::string& note);

}  // namespace plumb::jobs
