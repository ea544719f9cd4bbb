// Successive halving over a tuning space (see tune_search.h).
#include "plumb/analysis/tune_search.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "plumb/core/errors.h"

namespace plumb::analysis {
namespace {

bool feasible(const TrialOutcome& o, double latency_bound_s) {
  return o.outcome.ok() && o.throughput > 0 &&
         (latency_bound_s <= 0 || o.step_s <= latency_bound_s);
}

// Indices (into rung.points) of the rung's feasible points, fastest first; ties keep the
// order measured, so the stock point wins a tie.
std::vector<size_t> rank_rung(const Rung& rung, double latency_bound_s) {
  std::vector<size_t> order;
  for (size_t i = 0; i < rung.points.size(); ++i)
    if (feasible(rung.outcomes[i], latency_bound_s)) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return rung.outcomes[a].throughput > rung.outcomes[b].throughput;
  });
  return order;
}

}  // namespace

std::vector<TunePoint> all_points(const std::vector<TuneFactor>& factors) {
  std::vector<TunePoint> points = {TunePoint(factors.size(), 0)};
  for (size_t f = 0; f < factors.size(); ++f) {
    std::vector<TunePoint> grown;
    // Value 0 first keeps stock (all zeros) at the front.
    for (size_t v = 0; v < factors[f].values.size(); ++v)
      for (TunePoint p : points) {
        p[f] = v;
        grown.push_back(std::move(p));
      }
    points = std::move(grown);
  }
  return points;
}

HalvingResult successive_halving(const std::vector<TunePoint>& space, const MeasureFn& measure,
                                 const HalvingOptions& o) {
  if (o.eta < 2) throw UsageError("successive halving needs eta >= 2");
  if (o.first_steps == 0) throw UsageError("successive halving needs at least one step per trial");
  if (!(o.budget_s > 0)) throw UsageError("--budget must be a positive duration");
  HalvingResult result;
  std::vector<size_t> survivors(space.size());
  std::iota(survivors.begin(), survivors.end(), size_t{0});
  size_t steps = o.first_steps;
  std::vector<double> previous_seconds;  // per survivor, its last trial's seconds
  size_t previous_steps = 0;
  while (!survivors.empty()) {
    if (!result.rungs.empty()) {
      double projected = 0;
      for (double s : previous_seconds)
        projected += s * static_cast<double>(steps) / static_cast<double>(previous_steps);
      if (result.seconds + projected > o.budget_s) {
        const double left = o.budget_s - result.seconds;
        result.stop_reason =
            left > 0 ? fmt::format(
                           "budget: rung {} ({} points x {} steps) was projected to take "
                           "{:.0f} s, {:.0f} s were left",
                           result.rungs.size(), survivors.size(), steps, projected, left)
                     : fmt::format("budget: spent by rung {}", result.rungs.size() - 1);
        break;
      }
    }
    Rung rung;
    rung.steps = steps;
    rung.points = survivors;
    std::vector<TunePoint> points;
    for (size_t i : survivors) points.push_back(space[i]);
    rung.outcomes = measure(points, steps);
    PLUMB_ASSERT(rung.outcomes.size() == points.size(), "one trial outcome per point");
    for (const auto& outcome : rung.outcomes) rung.seconds += outcome.seconds;
    result.seconds += rung.seconds;
    result.trials += points.size();
    const auto order = rank_rung(rung, o.latency_bound_s);
    result.rungs.push_back(std::move(rung));
    const Rung& done = result.rungs.back();
    result.ranking.clear();
    for (size_t i : order) result.ranking.push_back(done.points[i]);
    if (order.size() <= o.finalists) {
      result.stop_reason = order.empty() ? "no configuration ran within the bounds"
                                         : fmt::format("{} finalist(s) left", order.size());
      break;
    }
    const size_t keep = std::max(o.finalists, (order.size() + o.eta - 1) / o.eta);  // ceil(n / eta)
    survivors.clear();
    previous_seconds.clear();
    for (size_t k = 0; k < keep; ++k) {
      survivors.push_back(done.points[order[k]]);
      previous_seconds.push_back(done.outcomes[order[k]].seconds);
    }
    previous_steps = done.steps;
    steps *= o.eta;
  }
  return result;
}

const TrialOutcome* latest_outcome(const HalvingResult& result, size_t point) {
  for (auto rung = result.rungs.rbegin(); rung != result.rungs.rend(); ++rung)
    for (size_t i = 0; i < rung->points.size(); ++i)
      if (rung->points[i] == point && rung->outcomes[i].outcome.ok()) return &rung->outcomes[i];
  return nullptr;
}

size_t quickest_point(const HalvingResult& result, size_t space_size) {
  size_t best = space_size;
  double best_step = INFINITY;
  for (const auto& rung : result.rungs)
    for (size_t i = 0; i < rung.points.size(); ++i)
      if (rung.outcomes[i].outcome.ok() && rung.outcomes[i].step_s < best_step) {
        best_step = rung.outcomes[i].step_s;
        best = rung.points[i];
      }
  return best;
}

std::vector<ContributionPoint> contribution_points(const TunePoint& stock, const TunePoint& best) {
  PLUMB_ASSERT(stock.size() == best.size(), "points of one space");
  std::vector<ContributionPoint> out;
  for (size_t f = 0; f < stock.size(); ++f) {
    if (stock[f] == best[f]) continue;
    TunePoint added = stock;
    added[f] = best[f];
    out.push_back({f, true, added});
    TunePoint removed = best;
    removed[f] = stock[f];
    out.push_back({f, false, removed});
  }
  return out;
}

}  // namespace plumb::analysis
