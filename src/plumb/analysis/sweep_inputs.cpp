// Shared checks and lookups of the sweep analyses (see sweep_inputs.h).
#include "plumb/analysis/sweep_inputs.h"

#include <algorithm>
#include <cmath>

#include "plumb/analysis/input_checks.h"
#include "plumb/core/errors.h"

namespace plumb::analysis::sweep {

std::string join_names(const std::set<std::string>& names) {
  if (names.empty()) return "(none)";
  std::string out;
  for (const std::string& name : names) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

std::string join_values(const std::set<double>& values) {
  std::string out;
  for (double v : values) {
    if (!out.empty()) out += ", ";
    out += number_text(v);
  }
  return out;
}

std::set<std::string> param_names(const std::vector<SweepPoint>& points) {
  std::set<std::string> names;
  for (const SweepPoint& p : points) {
    for (const auto& [key, value] : p.params) names.insert(key);
  }
  return names;
}

std::set<std::string> metric_names(const std::vector<SweepPoint>& points) {
  std::set<std::string> names;
  for (const SweepPoint& p : points) {
    for (const auto& [key, value] : p.metrics) names.insert(key);
  }
  return names;
}

void require_points(const std::vector<SweepPoint>& points, const std::string& what) {
  if (points.empty()) {
    throw UsageError("no " + what + " to analyse: run or select a sweep with finished points");
  }
  for (const SweepPoint& p : points) {
    for (const auto& [key, value] : p.params) {
      if (!std::isfinite(value)) {
        throw UsageError("parameter '" + key + "' of a point in " + what + " is " +
                         number_text(value) + "; sweep parameters must be finite numbers");
      }
    }
  }
}

void require_metric(const std::vector<SweepPoint>& points, const std::string& metric,
                    const std::string& what) {
  for (const SweepPoint& p : points) {
    if (p.metrics.count(metric) > 0) return;
  }
  throw UsageError("unknown metric '" + metric + "' in " + what +
                   "; metrics recorded: " + join_names(metric_names(points)));
}

void require_param_everywhere(const std::vector<SweepPoint>& points, const std::string& key,
                              const std::string& what) {
  const auto lacking = std::count_if(points.begin(), points.end(),
                                     [&](const SweepPoint& p) { return p.params.count(key) == 0; });
  if (lacking == 0) return;
  const std::set<std::string> known = param_names(points);
  if (known.count(key) == 0) {
    throw UsageError("unknown parameter '" + key + "' in " + what +
                     "; parameters: " + join_names(known));
  }
  throw UsageError("parameter '" + key + "' is missing from " + std::to_string(lacking) + " of " +
                   std::to_string(points.size()) + " " + what +
                   " (several model types mixed?); select one group's points first");
}

std::optional<double> finite_metric(const SweepPoint& point, const std::string& metric) {
  const auto it = point.metrics.find(metric);
  if (it == point.metrics.end() || !std::isfinite(it->second)) return std::nullopt;
  return it->second;
}

std::set<double> values_of(const std::vector<SweepPoint>& points, const std::string& key) {
  std::set<double> values;
  for (const SweepPoint& p : points) {
    const auto it = p.params.find(key);
    if (it != p.params.end()) values.insert(it->second);
  }
  return values;
}

std::set<std::string> varying_params(const std::vector<SweepPoint>& points) {
  std::set<std::string> varying;
  for (const std::string& key : param_names(points)) {
    const bool everywhere = std::all_of(
        points.begin(), points.end(), [&](const SweepPoint& p) { return p.params.count(key) > 0; });
    if (!everywhere || values_of(points, key).size() > 1) varying.insert(key);
  }
  return varying;
}

std::vector<std::string> groups_in_order(const std::vector<SweepPoint>& points) {
  std::vector<std::string> groups;
  for (const SweepPoint& p : points) {
    if (std::find(groups.begin(), groups.end(), p.group) == groups.end()) groups.push_back(p.group);
  }
  return groups;
}

}  // namespace plumb::analysis::sweep
