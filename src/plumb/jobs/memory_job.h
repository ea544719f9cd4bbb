// plumb memory's job (TBD Sec. IV-B): one memory-profiling pass per batch size, each stored as it
// finishes under one group and read back; the per-example growth of each category when two or
// more batch sizes ran; and with a memory limit the largest batch whose step fits it, predicted
// from the fit, searched by measuring and verified by running it under the limit. Its reporters
// are in memory_report.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "plumb/analysis/memory_capacity.h"
#include "plumb/analysis/memory_scaling.h"
#include "plumb/core/generation.h"
#include "plumb/run/runner.h"
#include "plumb/store/profile_records.h"
#include "plumb/store/results_store.h"

namespace plumb::jobs {

struct MemoryJobOptions {
  run::RunOptions run;       // every pass's, but its batch; one dtype
  std::vector<int> batches;  // measured first, in order
  int64_t memory_limit = 0;  // bytes; 0: no capacity search
  int warmup_steps = 2;      // profile::MemoryOptions::warmup_steps
  // A generation's phase to show (cli/phase_option.h); nullopt: each phase.
  std::optional<Phase> phase;
  std::string db;
  std::string tag;
};

struct MemoryJobResult {
  std::string workload, mode;
  std::string group;  // of the passes in the store
  std::string db_path;
  std::vector<store::StoredMemoryProfile> passes;    // as read back, in the order they ran
  std::optional<analysis::MemoryScaling> scaling;    // two or more batch sizes ran ok
  std::optional<analysis::CapacityResult> capacity;  // with a memory limit
  std::optional<Phase> phase;                        // as asked for
  bool all_ok = true;  // every pass ran ok and, with a limit, a batch was verified under it
};

// Throws UsageError when the limit is below what batch 1 needs or batch 1 did not run.
// `progress` gets a line per pass and its outcome.
MemoryJobResult run_memory_job(const MemoryJobOptions& options, const run::ProgressFn& progress);

}  // namespace plumb::jobs
