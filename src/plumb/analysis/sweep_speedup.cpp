// Speedup of one sweep over another run of the same sweep on a different platform, library
// version or precision (ParaDnn, MLSys 2020, Sec. 5-6, Fig. 8, 9, 11, 12): per-setting ratios,
// their geometric mean, and the sensitivity of the ratio to the hyperparameters. Rules in
// sweep_analysis.h.
#include <cmath>
#include <map>
#include <string>
#include <utility>

#include "plumb/analysis/sweep_analysis.h"
#include "plumb/analysis/sweep_inputs.h"
#include "plumb/core/errors.h"

namespace plumb::analysis {
namespace {

constexpr const char* kRatioMetric = "speedup";

// What two points must share to be compared: their group and the matched parameter values.
using MatchKey = std::pair<std::string, std::map<std::string, double>>;

struct Side {
  std::vector<MatchKey> order;       // first appearance
  std::map<MatchKey, double> sum;    // metric sum per key
  std::map<MatchKey, size_t> count;  // points per key
  size_t failed = 0;
  size_t repeated_keys = 0;  // keys with more than one point
};

MatchKey match_key(const SweepPoint& point, const std::vector<std::string>& keys) {
  if (keys.empty()) return {point.group, point.params};
  std::map<std::string, double> values;
  for (const std::string& key : keys) values[key] = point.params.at(key);
  return {point.group, values};
}

// A ratio needs a positive, finite metric on both sides (0 or negative throughput is a failed
// or broken measurement, and its log would poison the geometric mean).
Side collect(const std::vector<SweepPoint>& points, const std::vector<std::string>& keys,
             const std::string& metric) {
  Side side;
  for (const SweepPoint& p : points) {
    const std::optional<double> value = sweep::finite_metric(p, metric);
    if (!value || !(*value > 0)) {
      ++side.failed;
      continue;
    }
    MatchKey key = match_key(p, keys);
    if (side.count[key]++ == 0) {
      side.order.push_back(key);
    } else if (side.count[key] == 2) {
      ++side.repeated_keys;
    }
    side.sum[key] += *value;
  }
  return side;
}

double side_mean(const Side& side, const MatchKey& key) {
  return side.sum.at(key) / static_cast<double>(side.count.at(key));
}

void note_side(const Side& side, const std::string& name, const std::string& metric, bool by_keys,
               std::vector<std::string>& notes) {
  if (side.failed > 0) {
    notes.push_back(name + ": " + std::to_string(side.failed) + " point(s) without a positive '" +
                    metric + "' (failed runs) left out");
  }
  if (side.repeated_keys > 0) {
    notes.push_back(name + ": " + std::to_string(side.repeated_keys) +
                    (by_keys ? " setting(s) of the match keys had several points (repeats, or "
                               "values of other parameters); their metric was averaged"
                             : " setting(s) had repeated points; their metric was averaged"));
  }
}

}  // namespace

Speedup speedup(const std::vector<SweepPoint>& points_a, const std::vector<SweepPoint>& points_b,
                const std::string& metric, const std::vector<std::string>& keys, bool log_inputs) {
  sweep::require_points(points_a, "side A points");
  sweep::require_points(points_b, "side B points");
  sweep::require_metric(points_a, metric, "side A points");
  sweep::require_metric(points_b, metric, "side B points");
  for (const std::string& key : keys) {
    sweep::require_param_everywhere(points_a, key, "side A points");
    sweep::require_param_everywhere(points_b, key, "side B points");
  }

  Speedup out;
  out.metric = metric;
  out.keys = keys;
  const Side a = collect(points_a, keys, metric);
  const Side b = collect(points_b, keys, metric);
  out.failed_a = a.failed;
  out.failed_b = b.failed;
  note_side(a, "A", metric, !keys.empty(), out.notes);
  note_side(b, "B", metric, !keys.empty(), out.notes);

  double log_sum = 0;
  std::vector<SweepPoint> ratios;  // input of the sensitivity fit
  for (const MatchKey& key : a.order) {
    if (b.count.count(key) == 0) {
      ++out.unmatched_a;
      continue;
    }
    SpeedupPoint sp;
    sp.group = key.first;
    sp.params = key.second;
    sp.a = side_mean(a, key);
    sp.b = side_mean(b, key);
    sp.a_count = a.count.at(key);
    sp.b_count = b.count.at(key);
    sp.ratio = sp.b / sp.a;
    log_sum += std::log(sp.ratio);
    ratios.push_back(SweepPoint{sp.params, {{kRatioMetric, sp.ratio}}, sp.group});
    out.points.push_back(std::move(sp));
  }
  out.unmatched_b = b.order.size() - out.points.size();
  if (out.points.empty()) {
    out.notes.push_back("no setting of A matches one of B (same group and " +
                        std::string(keys.empty() ? "all parameters" : "match keys") +
                        "); check that both sides ran the same sweep, or pass fewer keys");
    out.notes.push_back("sensitivity not fitted: no matched points");
    return out;
  }
  out.geomean = std::exp(log_sum / static_cast<double>(out.points.size()));

  // The fit is a by-product: a comparison with too few matches is still a valid comparison.
  try {
    out.sensitivity = sensitivity(ratios, {}, kRatioMetric, log_inputs);
  } catch (const UsageError& e) {
    out.notes.push_back(std::string("sensitivity not fitted: ") + e.what());
  }
  return out;
}

}  // namespace plumb::analysis
