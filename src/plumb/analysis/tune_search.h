// The search behind `plumb tune`: successive halving over the points of a tuning space (every
// combination of the factors' values), short trials first, and the points that stay ahead
// measured ever longer; then the points that say which change contributed what (one factor at
// a time from the stock configuration, and removed one at a time from the best). Pure: trials
// are measured by a callback, so the rules are tested on synthetic throughputs.
//
// Successive halving (Jamieson & Talwalkar 2016): rung 0 measures every point with
// `first_steps` timed steps; each later rung keeps the best 1/eta of the previous one and gives
// each eta times the steps, until `finalists` are left. A rung is not started when its
// projected time (each survivor's previous trial time scaled by the step ratio) does not fit
// in what is left of the budget; the search then ranks the last rung measured. Points whose
// trial failed, or whose mean step time exceeds the latency bound, leave the search.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "plumb/run/tune_point.h"

namespace plumb::analysis {

// The space's vocabulary lives with the trials that measure it (run/tune_point.h).
using run::point_text;
using run::TrialOutcome;
using run::TuneFactor;
using run::TunePoint;

// Every point of the space (the cartesian product of the factors' values), stock first.
std::vector<TunePoint> all_points(const std::vector<TuneFactor>& factors);

// Measures `points` with `steps` timed steps each and returns one outcome per point, in order.
using MeasureFn =
    std::function<std::vector<TrialOutcome>(const std::vector<TunePoint>& points, size_t steps)>;

struct HalvingOptions {
  size_t first_steps = 3;
  size_t eta = 3;
  size_t finalists = 1;
  double budget_s = 600;       // the search's wall time
  double latency_bound_s = 0;  // > 0: a point whose mean step exceeds it is infeasible
};

struct Rung {
  size_t steps = 0;
  std::vector<size_t> points;  // indices into the space
  std::vector<TrialOutcome> outcomes;
  double seconds = 0;  // sum of the trials' seconds
};

struct HalvingResult {
  std::vector<Rung> rungs;
  // Indices of the last rung's feasible points, fastest first (empty: none was feasible).
  std::vector<size_t> ranking;
  double seconds = 0;       // all trials
  std::string stop_reason;  // why no further rung was started
  size_t trials = 0;
};

// Throws UsageError for eta < 2, no steps, or a budget that is not positive.
HalvingResult successive_halving(const std::vector<TunePoint>& space, const MeasureFn& measure,
                                 const HalvingOptions& options);

// The feasible outcome a point reached in the highest rung that measured it, or nullptr.
const TrialOutcome* latest_outcome(const HalvingResult& result, size_t point);
// Of every point measured, the one with the shortest mean step (the closest to a latency bound
// nobody met); the space's size when nothing ran.
size_t quickest_point(const HalvingResult& result, size_t space_size);

// The points that apportion a speedup between the factors where `best` differs from `stock`.
struct ContributionPoint {
  size_t factor = 0;
  bool from_stock = true;  // true: stock with this factor set as in best; false: best with
                           // this factor set back to stock's
  TunePoint point;
};
std::vector<ContributionPoint> contribution_points(const TunePoint& stock, const TunePoint& best);

}  // namespace plumb::analysis
