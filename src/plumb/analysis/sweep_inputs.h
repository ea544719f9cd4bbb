// Checks and lookups the sweep analyses (sweep_analysis.h) share: which parameters and metrics
// a set of sweep points has, which parameters vary, and the lists that UsageError messages
// print so the user sees the valid names and values. Internal to analysis/.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "plumb/analysis/sweep_analysis.h"

namespace plumb::analysis::sweep {

// "a, b, c" for names; "1, 2, 4" for values (shortest readable number text).
std::string join_names(const std::set<std::string>& names);
std::string join_values(const std::set<double>& values);

// Names of every parameter / metric that appears in any point.
std::set<std::string> param_names(const std::vector<SweepPoint>& points);
std::set<std::string> metric_names(const std::vector<SweepPoint>& points);

// Throws UsageError when `points` is empty or a parameter value is not finite (a NaN would
// break the exact matching every analysis relies on); `what` names the list ("sweep points").
void require_points(const std::vector<SweepPoint>& points, const std::string& what);

// Throws UsageError when no point has `metric`, naming the metrics that exist.
void require_metric(const std::vector<SweepPoint>& points, const std::string& metric,
                    const std::string& what);

// Throws UsageError when some point lacks parameter `key`, naming the parameters every point
// has and suggesting to filter to one group.
void require_param_everywhere(const std::vector<SweepPoint>& points, const std::string& key,
                              const std::string& what);

// The point's metric when present and finite; nullopt for a failed run.
std::optional<double> finite_metric(const SweepPoint& point, const std::string& metric);

// Distinct values of `key` among the points that have it.
std::set<double> values_of(const std::vector<SweepPoint>& points, const std::string& key);

// Parameters that vary among `points`: two distinct values, or present in some points only.
std::set<std::string> varying_params(const std::vector<SweepPoint>& points);

// Groups in order of first appearance.
std::vector<std::string> groups_in_order(const std::vector<SweepPoint>& points);

}  // namespace plumb::analysis::sweep
