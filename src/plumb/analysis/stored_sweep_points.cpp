// Reads finished sweep points from the store and turns them into analysis points.
#include "plumb/analysis/stored_sweep_points.h"

#include <fmt/format.h>

#include "plumb/core/errors.h"
#include "plumb/core/text.h"

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

}  // namespace plumb::analysis
