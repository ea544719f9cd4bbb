// Reads finished sweep points from the store and turns them into analysis points.
#include "plumb/analysis/stored_sweep_points.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "plumb/core/errors.h"
#include "plumb/core/text.h"
#include "plumb/store/sweep_records.h"

namespace plumb::analysis {

SweepPoint analysis_point(const store::StoredSweep& sweep, const store::SweepPointRecord& point) {
  SweepPoint a;
  a.group = sweep.workload + (point.mode == "infer" ? " infer" : "");
  for (const auto& [key, value] : point.params.items()) {
    if (value.is_number()) {
      a.params[key] = value.get<double>();
    } else {
      a.group += " " + key + "=" + value.get<std::string>();
    }
  }
  for (const auto& [key, value] : point.metrics.items())
    if (value.is_number()) a.metrics[key] = value.get<double>();
  return a;
}

std::vector<SweepPoint> stored_sweep_points(const store::ResultsStore& db, const std::string& sweep,
                                            const std::string& tag) {
  std::vector<store::StoredSweep> sweeps;
  for (const auto& s : db.load_sweeps())
    if (sweep.empty() || s.name == sweep) sweeps.push_back(s);
  if (sweeps.empty()) {
    std::vector<std::string> names;
    for (const auto& s : db.load_sweeps()) names.push_back(s.name);
    throw UsageError(sweep.empty()
                         ? fmt::format("'{}' holds no sweeps; run plumb sweep first", db.path())
                         : fmt::format("'{}' holds no sweep named '{}'; its sweeps: {}", db.path(),
                                       sweep,
                                       names.empty() ? std::string("none") : join(names, ", ")));
  }
  std::vector<SweepPoint> out;
  for (const auto& s : sweeps) {
    for (const auto& p : db.load_sweep_points(s.id)) {
      if (!tag.empty()) {
        const auto run = p.run_id > 0 ? db.load_run(p.run_id, false) : std::nullopt;
        if (!run || run->tag != tag) continue;
      }
      out.push_back(analysis_point(s, p));
    }
  }
  return out;
}

namespace {

// "key=value" of each non-numeric parameter in a group ("paradnn_cnn block=bottleneck").
std::map<std::string, std::string> text_params(const std::string& group) {
  std::map<std::string, std::string> out;
  for (const auto& token : split(group, ' ')) {
    const auto eq = token.find('=');
    if (eq != std::string::npos) out[token.substr(0, eq)] = token.substr(eq + 1);
  }
  return out;
}

}  // namespace

std::vector<SweepPoint> with_text_params(std::vector<SweepPoint> points,
                                         const std::map<std::string, std::string>& values) {
  for (const auto& [key, value] : values) {
    std::set<std::string> keys, seen;
    for (const auto& p : points)
      for (const auto& [k, v] : text_params(p.group)) {
        keys.insert(k);
        if (k == key) seen.insert(v);
      }
    if (seen.empty())
      throw UsageError(fmt::format(
          "'{}' is not a non-numeric parameter of these sweep points ({}); numeric ones are "
          "fixed with --fix KEY=NUMBER",
          key,
          keys.empty() ? std::string("they have none") : join({keys.begin(), keys.end()}, ", ")));
    if (!seen.count(value))
      throw UsageError(fmt::format("no sweep point has {}={}; its values: {}", key, value,
                                   join({seen.begin(), seen.end()}, ", ")));
    points.erase(std::remove_if(points.begin(), points.end(),
                                [&](const SweepPoint& p) {
                                  const auto t = text_params(p.group);
                                  auto it = t.find(key);
                                  return it == t.end() || it->second != value;
                                }),
                 points.end());
  }
  return points;
}

}  // namespace plumb::analysis
