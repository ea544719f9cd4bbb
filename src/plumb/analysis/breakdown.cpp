// Fathom-style breakdowns of a stored operator profile: time by operator, category or layer,
// the cumulative "few operator types dominate" curve, training vs inference shares, and
// Amdahl fits of how each category scales with threads. Pure functions, no LibTorch.
#include "plumb/analysis/breakdown.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "plumb/core/errors.h"

namespace plumb::analysis {
namespace {

constexpr const char* kNoLayer = "(no layer)";
constexpr const char* kUncostedRow = "uncosted";
constexpr const char* kStepFit = "step";

double ratio_or_zero(double num, double den) {
  return den > 0 ? num / den : 0.0;
}

bool is_uncosted(const profile::OpStat& op) {
  return op.kind == profile::kUncosted;
}

// Sorts (name, value) pairs by value descending, ties by name, so output is deterministic.
void sort_by_value_desc(std::vector<std::pair<std::string, double>>& items) {
  std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) {
    if (a.second != b.second) return a.second > b.second;
    return a.first < b.first;
  });
}

// Self time per operator name (forward and backward merged, every kind), sorted descending.
std::vector<std::pair<std::string, double>> time_by_op_name(const profile::StepProfile& profile,
                                                            bool uncosted_only) {
  std::map<std::string, double> by_name;
  for (const profile::OpStat& op : profile.ops) {
    if (uncosted_only && !is_uncosted(op)) continue;
    by_name[op.name] += op.self_s;
  }
  std::vector<std::pair<std::string, double>> items(by_name.begin(), by_name.end());
  sort_by_value_desc(items);
  return items;
}

}  // namespace

// Uncosted rows stay in their own category here because the question is "what kind of work",
// not "what work do we know the cost of".
std::map<std::string, double> category_shares(const profile::StepProfile& profile) {
  std::map<std::string, double> time;
  double total = 0;
  for (const profile::OpStat& op : profile.ops) {
    time[op.category] += op.self_s;
    total += op.self_s;
  }
  for (auto& [name, t] : time) t = ratio_or_zero(t, total);
  return time;
}

std::map<std::string, double> op_type_shares(const profile::StepProfile& profile) {
  const auto items = time_by_op_name(profile, /*uncosted_only=*/false);
  double total = 0;
  for (const auto& item : items) total += item.second;
  std::map<std::string, double> shares;
  for (const auto& [name, t] : items) shares[name] = ratio_or_zero(t, total);
  return shares;
}

// The row an operator statistic belongs to. In op view forward and backward calls of the
// same operator stay apart, because users ask "what does the backward pass of X cost".
std::string group_key(const profile::OpStat& op, GroupBy by) {
  switch (by) {
    case GroupBy::kOp:
      return op.scope == "backward" ? op.name + " (backward)" : op.name;
    case GroupBy::kCategory:
      // Uncosted leaf time gets its own row so unknown work is never hidden in a category.
      return is_uncosted(op) ? kUncostedRow : op.category;
    case GroupBy::kLayer:
      return op.layer.empty() ? kNoLayer : op.layer;
  }
  PLUMB_ASSERT(false, "unhandled GroupBy");
  return {};
}

GroupBy parse_group_by(const std::string& text) {
  if (text == "op") return GroupBy::kOp;
  if (text == "category") return GroupBy::kCategory;
  if (text == "layer") return GroupBy::kLayer;
  throw UsageError("unknown --by '" + text + "'; valid: op, category, layer");
}

Breakdown breakdown(const profile::StepProfile& profile, GroupBy by) {
  std::map<std::string, BreakdownRow> groups;
  Breakdown result;
  for (const profile::OpStat& op : profile.ops) {
    const std::string key = group_key(op, by);
    BreakdownRow& row = groups[key];
    row.name = key;
    row.time_s += op.self_s;
    row.calls += op.calls;
    // Only costed leaf rows carry work by construction (op_profile.h), so no filter here;
    // filtering would hide a profiler bug instead of showing it.
    row.flops += op.flops;
    row.bytes += op.bytes_read + op.bytes_written;
    if (is_uncosted(op)) {
      row.uncosted_time_s += op.self_s;
      result.uncosted_time_s += op.self_s;
    }
  }

  result.step_s = profile.step_s;
  for (auto& [key, row] : groups) {
    row.time_share = ratio_or_zero(row.time_s, profile.step_s);
    row.gflops_per_s = ratio_or_zero(row.flops, row.time_s) / 1e9;
    row.gbytes_per_s = ratio_or_zero(row.bytes, row.time_s) / 1e9;
    row.intensity = ratio_or_zero(row.flops, row.bytes);
    result.op_time_s += row.time_s;
    result.rows.push_back(std::move(row));
  }
  std::sort(result.rows.begin(), result.rows.end(),
            [](const BreakdownRow& a, const BreakdownRow& b) {
              if (a.time_s != b.time_s) return a.time_s > b.time_s;
              return a.name < b.name;
            });

  result.overhead_s = profile.step_s - result.op_time_s;
  result.uncosted_share = ratio_or_zero(result.uncosted_time_s, profile.step_s);
  for (const auto& [name, t] : time_by_op_name(profile, /*uncosted_only=*/true)) {
    result.uncosted_ops.push_back(name);
  }
  return result;
}

CumulativeCurve cumulative_curve(const profile::StepProfile& profile) {
  const auto items = time_by_op_name(profile, /*uncosted_only=*/false);
  CumulativeCurve curve;
  // Summed in the sorted order so the last running sum divided by it is exactly 1.
  double total = 0;
  for (const auto& item : items) total += item.second;
  if (!(total > 0)) return curve;  // no operator time to distribute: nothing to rank

  double running = 0;
  for (const auto& [name, t] : items) {
    running += t;
    curve.names.push_back(name);
    curve.share.push_back(t / total);
    curve.cumulative.push_back(running / total);
  }
  constexpr double kEpsilon = 1e-12;  // 0.5 + 0.3 + 0.1 must count as reaching 0.9
  for (size_t k = 0; k < curve.cumulative.size(); ++k) {
    if (curve.cumulative[k] >= 0.9 - kEpsilon) {
      curve.count_for_90 = k + 1;
      break;
    }
  }
  return curve;
}

ModeComparison compare_modes(const profile::StepProfile& train, const profile::StepProfile& infer) {
  ModeComparison cmp;
  cmp.train_step_s = train.step_s;
  cmp.infer_step_s = infer.step_s;
  cmp.step_ratio =
      infer.step_s > 0 ? train.step_s / infer.step_s : std::numeric_limits<double>::quiet_NaN();
  for (const auto& [category, share] : category_shares(train)) {
    cmp.category_share[category].first = share;
  }
  for (const auto& [category, share] : category_shares(infer)) {
    cmp.category_share[category].second = share;
  }
  return cmp;
}

ScalingFit fit_amdahl(const std::string& name, const std::vector<int>& threads,
                      const std::vector<double>& time_s) {
  if (threads.size() != time_s.size()) {
    throw UsageError(
        fmt::format("scaling fit '{}': {} thread counts but {} times; give one time "
                    "per thread count",
                    name, threads.size(), time_s.size()));
  }
  std::vector<std::pair<int, double>> points;
  for (size_t i = 0; i < threads.size(); ++i) {
    if (threads[i] <= 0 || !(time_s[i] > 0) || !std::isfinite(time_s[i])) {
      throw UsageError(
          fmt::format("scaling fit '{}': thread count {} with time {} s; thread "
                      "counts and times must be positive",
                      name, threads[i], time_s[i]));
    }
    points.emplace_back(threads[i], time_s[i]);
  }
  std::sort(points.begin(), points.end());
  for (size_t i = 1; i < points.size(); ++i) {
    // A repeated count has no single baseline time; better to say so than to pick one.
    if (points[i].first == points[i - 1].first) {
      throw UsageError(
          fmt::format("scaling fit '{}': thread count {} appears twice; profile each count once",
                      name, points[i].first));
    }
  }
  if (points.size() < 2) {
    throw UsageError(fmt::format(
        "scaling fit '{}': needs at least 2 distinct thread counts, got {}", name, points.size()));
  }

  ScalingFit fit;
  fit.name = name;
  const double p1 = points.front().first;
  const double t1 = points.front().second;
  for (const auto& [p, t] : points) {
    fit.threads.push_back(p);
    fit.time_s.push_back(t);
    fit.speedup.push_back(t1 / t);
  }

  // Normalised time y = t(p)/t1 is linear in x = p1/p: y - x = f (1 - x). Least squares
  // through the origin in (1 - x, y - x); the baseline point (x = 1) carries no information.
  double num = 0, den = 0;
  for (size_t i = 1; i < points.size(); ++i) {
    const double x = p1 / points[i].first;
    const double y = points[i].second / t1;
    num += (y - x) * (1 - x);
    den += (1 - x) * (1 - x);
  }
  fit.serial_fraction = std::clamp(num / den, 0.0, 1.0);  // den > 0: counts are distinct

  // Goodness of fit on speedups, the quantity plotted and read by users.
  const double f = fit.serial_fraction;
  double mean = 0;
  for (double s : fit.speedup) mean += s;
  mean /= static_cast<double>(fit.speedup.size());
  double ss_res = 0, ss_tot = 0;
  for (size_t i = 0; i < points.size(); ++i) {
    const double x = p1 / points[i].first;
    const double predicted = 1.0 / (f + (1 - f) * x);
    ss_res += (fit.speedup[i] - predicted) * (fit.speedup[i] - predicted);
    ss_tot += (fit.speedup[i] - mean) * (fit.speedup[i] - mean);
  }
  constexpr double kTiny = 1e-12;  // speedups are O(1), so an absolute tolerance is fine
  if (ss_tot <= kTiny) {
    fit.r_squared = ss_res <= kTiny ? 1.0 : 0.0;
  } else {
    fit.r_squared = 1.0 - ss_res / ss_tot;
  }
  return fit;
}

std::vector<ScalingFit> thread_scaling(const std::vector<int>& threads,
                                       const std::vector<profile::StepProfile>& profiles) {
  if (threads.size() != profiles.size()) {
    throw UsageError(
        fmt::format("thread scaling: {} thread counts but {} profiles; give one "
                    "profile per thread count",
                    threads.size(), profiles.size()));
  }
  std::vector<double> step_times;
  for (const profile::StepProfile& p : profiles) step_times.push_back(p.step_s);
  std::vector<ScalingFit> fits;
  fits.push_back(fit_amdahl(kStepFit, threads, step_times));  // validates the thread counts

  // Time per category at each thread count, in the category view (incl. "uncosted").
  std::vector<std::map<std::string, double>> category_time(profiles.size());
  for (size_t i = 0; i < profiles.size(); ++i) {
    for (const BreakdownRow& row : breakdown(profiles[i], GroupBy::kCategory).rows) {
      category_time[i][row.name] = row.time_s;
    }
  }
  const size_t base =
      static_cast<size_t>(std::min_element(threads.begin(), threads.end()) - threads.begin());

  std::vector<std::pair<std::string, double>> order;  // category, time at fewest threads
  for (const auto& [category, t] : category_time[base]) {
    bool fittable = true;
    for (const auto& times : category_time) {
      const auto it = times.find(category);
      // A category with no measurable time at some count has nothing to fit; skipping it
      // keeps one vanishing category from failing the whole scaling analysis.
      if (it == times.end() || !(it->second > 0)) fittable = false;
    }
    if (fittable) order.emplace_back(category, t);
  }
  sort_by_value_desc(order);
  for (const auto& [category, t] : order) {
    std::vector<double> times;
    for (const auto& per_profile : category_time) times.push_back(per_profile.at(category));
    fits.push_back(fit_amdahl(category, threads, times));
  }
  return fits;
}

}  // namespace plumb::analysis
