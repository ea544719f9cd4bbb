// Bridges the store and fusion mining: which stored profile a workload's fusion analysis reads
// (the newest successful one of its mode and precision), its graph (refused, with the command
// that fixes it, when the profile predates graph capture), and the stored fused-kernel check that
// realizes a mined pattern. Used by plumb analyze fusion and the report.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "plumb/analysis/fusion_mining.h"
#include "plumb/store/profile_records.h"
#include "plumb/store/results_store.h"

namespace plumb::analysis {

// The newest profile with status ok of `workload` in `mode` and `dtype`; nullptr when none.
const store::StoredProfile* newest_profile(const std::vector<store::StoredProfile>& profiles,
                                           const std::string& workload, const std::string& mode,
                                           const std::string& dtype);

// The graph stored with `profile`. Throws UsageError ("re-profile with this version", naming
// the plumb profile command) when it was stored before graph capture existed.
profile::StepGraph stored_graph(const store::ResultsStore& db, const store::StoredProfile& profile,
                                const std::string& db_path);

// The example shapes a realized check of `pattern` is built from and keyed by.
std::string check_shapes(const FusionPattern& pattern);

// The newest stored check of `kind` on the pattern's shapes at `threads` on `machine`.
const store::StoredFusedKernelCheck* matching_check(
    const std::vector<store::StoredFusedKernelCheck>& checks, const std::string& kind,
    const std::string& shapes, int threads, const std::string& machine);

}  // namespace plumb::analysis
