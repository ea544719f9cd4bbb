// plumb sweep's job (ParaDnn Sec. 2; TBD Fig. 4): the points of a sweep spec that this shard owns
// and the store does not hold yet, each measured whole (profile/sweep_point.h: its run, and its
// memory pass and observed step where the spec asks), its metrics and status derived
// (analysis/sweep_point_metrics.h), and stored as it finishes, so a rerun skips what is done.
// Reporters: sweep_report.h.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "plumb/core/workload.h"
#include "plumb/run/runner.h"
#include "plumb/run/sweep_spec.h"
#include "plumb/store/results_store.h"
#include "plumb/store/sweep_records.h"

namespace plumb::jobs {

struct SweepJobOptions {
  run::SweepSpec spec;  // validated against its workload
  run::Shard shard;
  bool probe = true;  // measure the machine's peak when none is stored (flops_util)
  std::string db;
  std::string tag;
};

struct SweepJobResult {
  std::string name, workload;
  size_t points = 0;  // in the whole sweep
  run::Shard shard;
  size_t skipped = 0;  // this shard's points already stored
  int failures = 0;    // points of this call whose status is not ok
  double seconds = 0, warmup_seconds = 0, measure_seconds = 0;
  std::vector<store::SweepPointRecord> finished;  // as stored, in the order run
  std::string db_path;
};

// `progress` gets the plan ("N points; M already stored, K to run") and one line per point.
SweepJobResult run_sweep_job(const Workload& workload, const SweepJobOptions& options,
                             const run::ProgressFn& progress);

}  // namespace plumb::jobs
