// Heat maps and box-plot statistics of ParaDnn-style sweeps (ParaDnn, MLSys 2020, Sec. 2.3,
// Fig. 2, 7, 11). Sensitivity regression is in sweep_sensitivity.cpp, speedups in
// sweep_speedup.cpp; the rules are documented in sweep_analysis.h.
#include <algorithm>
#include <cstddef>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "plumb/analysis/input_checks.h"
#include "plumb/analysis/sweep_analysis.h"
#include "plumb/analysis/sweep_inputs.h"
#include "plumb/core/errors.h"
#include "plumb/run/stats.h"

namespace plumb::analysis {
namespace {

// "layers=2, nodes=8" for error messages.
std::string assignment_text(const std::map<std::string, double>& values) {
  std::string out;
  for (const auto& [key, value] : values) {
    if (!out.empty()) out += ", ";
    out += key + "=" + number_text(value);
  }
  return out;
}

bool matches(const SweepPoint& point, const std::map<std::string, double>& fixed) {
  return std::all_of(fixed.begin(), fixed.end(), [&](const auto& kv) {
    const auto it = point.params.find(kv.first);
    return it != point.params.end() && it->second == kv.second;
  });
}

// Checks `fixed` against the points and returns every non-axis parameter's value in the map:
// the fixed ones plus those that never vary.
std::map<std::string, double> resolve_fixed(const std::vector<SweepPoint>& points,
                                            const std::string& x_key, const std::string& y_key,
                                            const std::map<std::string, double>& fixed) {
  const std::set<std::string> known = sweep::param_names(points);
  for (const auto& [key, value] : fixed) {
    if (known.count(key) == 0) {
      throw UsageError("cannot fix unknown parameter '" + key +
                       "'; parameters: " + sweep::join_names(known));
    }
    if (key == x_key || key == y_key) {
      throw UsageError("parameter '" + key + "' is an axis of the heat map; do not also fix it");
    }
    const std::set<double> values = sweep::values_of(points, key);
    if (values.count(value) == 0) {
      throw UsageError("no point has " + key + "=" + number_text(value) +
                       "; values swept: " + sweep::join_values(values));
    }
  }
  // Every varying parameter must be pinned, or cells would silently mix different models.
  const std::set<std::string> varying = sweep::varying_params(points);
  std::string unfixed;
  for (const std::string& key : varying) {
    if (key == x_key || key == y_key || fixed.count(key) > 0) continue;
    if (!unfixed.empty()) unfixed += "; ";
    unfixed += key + " (" + sweep::join_values(sweep::values_of(points, key)) + ")";
  }
  if (!unfixed.empty()) {
    throw UsageError("heat map of " + y_key + " x " + x_key +
                     ": these parameters vary and need a fixed value: " + unfixed);
  }
  std::map<std::string, double> resolved = fixed;
  for (const std::string& key : known) {
    if (key == x_key || key == y_key || varying.count(key) > 0) continue;
    resolved[key] = *sweep::values_of(points, key).begin();
  }
  return resolved;
}

size_t index_of(const std::vector<double>& sorted, double value) {
  const auto it = std::lower_bound(sorted.begin(), sorted.end(), value);
  PLUMB_ASSERT(it != sorted.end() && *it == value, "heat map axis misses a point's value");
  return static_cast<size_t>(std::distance(sorted.begin(), it));
}

}  // namespace

HeatMap heat_map(const std::vector<SweepPoint>& points, const std::string& x_key,
                 const std::string& y_key, const std::string& metric,
                 const std::map<std::string, double>& fixed) {
  sweep::require_points(points, "sweep points");
  const std::vector<std::string> groups = sweep::groups_in_order(points);
  if (groups.size() > 1) {
    throw UsageError("heat map points span several groups (" +
                     sweep::join_names({groups.begin(), groups.end()}) +
                     "); select one model type's points first");
  }
  if (x_key == y_key) {
    throw UsageError("heat map x and y are both '" + x_key + "'; choose two different parameters");
  }
  sweep::require_param_everywhere(points, x_key, "sweep points");
  sweep::require_param_everywhere(points, y_key, "sweep points");
  sweep::require_metric(points, metric, "sweep points");

  HeatMap map;
  map.x_key = x_key;
  map.y_key = y_key;
  map.metric = metric;
  map.group = groups.front();
  map.fixed = resolve_fixed(points, x_key, y_key, fixed);

  std::vector<const SweepPoint*> selected;
  for (const SweepPoint& p : points) {
    if (matches(p, fixed)) selected.push_back(&p);
  }
  if (selected.empty()) {
    // Each fixed value exists somewhere, but not together (e.g. a sweep that skipped a corner).
    throw UsageError("no point has " + assignment_text(fixed) +
                     " together; choose values swept in the same run");
  }

  std::set<double> xs, ys;
  for (const SweepPoint* p : selected) {
    xs.insert(p->params.at(x_key));
    ys.insert(p->params.at(y_key));
  }
  map.xs.assign(xs.begin(), xs.end());
  map.ys.assign(ys.begin(), ys.end());
  map.values.assign(map.ys.size(), std::vector<double>(map.xs.size(), 0.0));
  map.counts.assign(map.ys.size(), std::vector<size_t>(map.xs.size(), 0));

  for (const SweepPoint* p : selected) {
    const std::optional<double> value = sweep::finite_metric(*p, metric);
    if (!value) {
      ++map.n_failed;
      continue;
    }
    const size_t xi = index_of(map.xs, p->params.at(x_key));
    const size_t yi = index_of(map.ys, p->params.at(y_key));
    map.values[yi][xi] += *value;
    ++map.counts[yi][xi];
    ++map.n_points;
  }
  for (size_t yi = 0; yi < map.ys.size(); ++yi) {
    for (size_t xi = 0; xi < map.xs.size(); ++xi) {
      const size_t count = map.counts[yi][xi];
      map.values[yi][xi] = count == 0 ? kSweepNaN : map.values[yi][xi] / static_cast<double>(count);
    }
  }
  return map;
}

std::vector<HeatMap> heat_maps(const std::vector<SweepPoint>& points, const std::string& x_key,
                               const std::string& y_key, const std::string& metric,
                               const std::map<std::string, double>& fixed) {
  sweep::require_points(points, "sweep points");
  std::vector<HeatMap> maps;
  for (const std::string& group : sweep::groups_in_order(points)) {
    std::vector<SweepPoint> members;
    for (const auto& p : points)
      if (p.group == group) members.push_back(p);
    // Parameters to split on: present with two values, or in some points only.
    std::map<std::string, std::set<double>> values;
    std::map<std::string, size_t> present;
    for (const auto& p : members)
      for (const auto& [key, value] : p.params) {
        values[key].insert(value);
        ++present[key];
      }
    std::vector<std::string> split_keys;
    for (const auto& [key, vs] : values)
      if (key != x_key && key != y_key && !fixed.count(key) &&
          (vs.size() > 1 || present[key] < members.size()))
        split_keys.push_back(key);
    if (split_keys.empty()) {
      maps.push_back(heat_map(members, x_key, y_key, metric, fixed));
      continue;
    }
    // The value combinations that occur among points matching `fixed`, ascending.
    std::set<std::vector<double>> combinations;
    for (const auto& p : members) {
      bool matches = true;
      for (const auto& [key, value] : fixed) {
        auto it = p.params.find(key);
        if (it != p.params.end() && it->second != value) matches = false;
      }
      std::vector<double> combination;
      for (const auto& key : split_keys) {
        auto it = p.params.find(key);
        if (it == p.params.end()) {
          matches = false;
          break;
        }
        combination.push_back(it->second);
      }
      if (matches) combinations.insert(combination);
    }
    if (combinations.empty())  // let heat_map name what is wrong with `fixed`
      maps.push_back(heat_map(members, x_key, y_key, metric, fixed));
    for (const auto& combination : combinations) {
      std::map<std::string, double> all_fixed = fixed;
      for (size_t k = 0; k < split_keys.size(); ++k) all_fixed[split_keys[k]] = combination[k];
      maps.push_back(heat_map(members, x_key, y_key, metric, all_fixed));
    }
  }
  return maps;
}

std::vector<BoxStats> box_plots(const std::vector<SweepPoint>& points, const std::string& metric) {
  sweep::require_points(points, "sweep points");
  sweep::require_metric(points, metric, "sweep points");

  std::vector<BoxStats> boxes;
  for (const std::string& group : sweep::groups_in_order(points)) {
    BoxStats box;
    box.group = group;
    std::vector<double> values;
    for (const SweepPoint& p : points) {
      if (p.group != group) continue;
      const std::optional<double> value = sweep::finite_metric(p, metric);
      if (value) {
        values.push_back(*value);
      } else {
        ++box.n_failed;
      }
    }
    box.n = values.size();
    if (!values.empty()) {
      std::sort(values.begin(), values.end());
      box.min = values.front();
      box.max = values.back();
      box.mean = run::mean_of(values);
      box.p2 = run::percentile_sorted(values, 0.02);
      box.p9 = run::percentile_sorted(values, 0.09);
      box.p50 = run::percentile_sorted(values, 0.50);
      box.p91 = run::percentile_sorted(values, 0.91);
      box.p98 = run::percentile_sorted(values, 0.98);
      for (double v : values) {
        if (v < box.p2 || v > box.p98) box.outliers.push_back(v);
      }
    }
    boxes.push_back(std::move(box));
  }
  return boxes;
}

}  // namespace plumb::analysis
