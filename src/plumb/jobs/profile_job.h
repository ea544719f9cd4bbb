// plumb profile's job (Fathom Sec. V): one operator-profiling pass per mode and thread count,
// each stored under one group and read back; per mode the thread scaling with Amdahl fits when
// several thread counts ran; across modes training vs inference at the first thread count.
// Its reporters are in profile_report.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "plumb/analysis/breakdown.h"
#include "plumb/analysis/roofline.h"
#include "plumb/core/generation.h"
#include "plumb/core/mode.h"
#include "plumb/run/runner.h"
#include "plumb/store/profile_records.h"
#include "plumb/store/results_store.h"

namespace plumb::jobs {

struct ProfileJobOptions {
  std::vector<run::RunOptions> passes;  // validated; one workload and batch, by mode then threads
  std::vector<Mode> modes;              // as asked for, in order
  int steps = 3;                        // observed after warm-up
  std::string trace;                    // Chrome trace-event file of each pass ("" = none)
  // A generation's phase to show (cli/phase_option.h); nullopt: both, each in its own section.
  std::optional<Phase> phase;
  std::string db;
  std::string tag;
};

struct ProfileJobResult {
  std::string workload;
  int64_t batch = 0;
  std::string group;  // of the passes in the store
  std::string db_path;
  std::vector<store::StoredProfile> passes;  // as read back, in the order they ran
  // Per mode with two or more thread counts that ran ok.
  std::vector<std::pair<std::string, std::vector<analysis::ScalingFit>>> scaling;
  std::optional<analysis::ModeComparison> train_vs_infer;  // both modes ran ok
  std::optional<Phase> phase;                              // as asked for
  // The roofs each pass's rows are placed on (analysis::place_rows), one per pass in order: the
  // newest probe of the pass's machine stored in the database, at the pass's dtype and threads.
  // A profile measures no probe (that takes minutes): without a usable one an entry is nullopt
  // and `roofs_note` says why and what to run, once for all passes.
  std::vector<std::optional<analysis::Ceilings>> roofs;
  int64_t probe_id = 0;  // the probe the roofs are from; 0: none
  std::string roofs_note;
  bool all_ok = true;
};

// Throws UsageError, before anything is measured, when --trace's directory cannot be written.
// `progress` gets each pass's lines (stored_or_fresh_profile.h) and where its trace went.
ProfileJobResult run_profile_job(const ProfileJobOptions& options, const run::ProgressFn& progress);

// Fills result.roofs, probe_id and roofs_note for result.passes from the probes stored in `db`
// (run_profile_job's last step; nothing is measured).
void place_on_stored_roofs(const store::ResultsStore& db, ProfileJobResult& result);

}  // namespace plumb::jobs
