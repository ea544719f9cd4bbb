// Sweep points as the sweep analyses (sweep_analysis.h) take them, read from a results store:
// shared by `plumb analyze` and the report.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "plumb/analysis/sweep_analysis.h"
#include "plumb/store/results_store.h"
#include "plumb/store/sweep_records.h"

namespace plumb::analysis {

// One stored point of `sweep` as an analysis point (see below for the group).
SweepPoint analysis_point(const store::StoredSweep& sweep, const store::SweepPointRecord& point);

// Points of `sweep` (or of every sweep when empty) with numeric parameters; the group is the
// workload, plus the mode for inference and any non-numeric parameter (cell=lstm), so box
// plots and heat maps never mix model types. `tag` keeps only points whose run has it.
// Throws UsageError naming the sweeps there are when none matches.
std::vector<SweepPoint> stored_sweep_points(const store::ResultsStore& db, const std::string& sweep,
                                            const std::string& tag);

// The points whose non-numeric parameters have the given values (block=bottleneck), read from
// their group. Throws UsageError naming the non-numeric parameters when a key is none of them,
// and the values there are when no point has the value.
std::vector<SweepPoint> with_text_params(std::vector<SweepPoint> points,
                                         const std::map<std::string, std::string>& values);

}  // namespace plumb::analysis
