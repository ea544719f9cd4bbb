// The Server scenario's rate search (see rate_search.h).
#include "plumb/run/rate_search.h"

#include <cmath>
#include <map>

#include "plumb/core/errors.h"

namespace plumb::run {

RateSearchResult search_rate(const RateSearchOptions& o, const RateTrialFn& trial) {
  PLUMB_ASSERT(o.ceiling_qps > 0 && o.resolution > 0 && o.max_trials >= 1,
               "the rate search needs a ceiling, a resolution and a trial budget");
  RateSearchResult r;
  r.failed_qps = o.ceiling_qps;
  auto tries = [&](double rate) {
    const TailVerdict v = trial(rate);
    r.trials.emplace_back(rate, v);
    return v == TailVerdict::kMet;
  };
  // Bracket: halve from half the ceiling until a rate holds.
  double rate = o.ceiling_qps / 2;
  while (static_cast<int>(r.trials.size()) < o.max_trials) {
    if (rate < o.lowest_qps) return r;
    if (tries(rate)) {
      r.held_qps = rate;
      break;
    }
    r.failed_qps = rate;
    rate /= 2;
  }
  if (r.held_qps == 0) return r;
  // Bisect geometrically: the rates span orders of magnitude between workloads.
  while (r.failed_qps > r.held_qps * (1 + o.resolution) &&
         static_cast<int>(r.trials.size()) < o.max_trials) {
    rate = std::sqrt(r.held_qps * r.failed_qps);
    if (tries(rate))
      r.held_qps = rate;
    else
      r.failed_qps = rate;
  }
  return r;
}

ServerSearch search_server_rate(double ceiling, double resolution, double percentile,
                                double longest_trial_s,
                                const std::function<std::pair<int, TailVerdict>(double)>& trial) {
  RateSearchOptions search;
  search.ceiling_qps = ceiling;
  search.resolution = resolution;
  // Below this, the queries a trial needs would take longer than longest_trial_s to arrive.
  search.lowest_qps = static_cast<double>(min_queries_for(percentile)) / longest_trial_s;
  std::map<double, int> run_at;
  const auto found = search_rate(search, [&](double rate) {
    const auto [index, verdict] = trial(rate);
    run_at[rate] = index;
    return verdict;
  });
  ServerSearch out;
  out.found = found.held_qps;
  out.failed = found.failed_qps;
  if (found.held_qps > 0) out.found_run = run_at[found.held_qps];
  return out;
}

}  // namespace plumb::run
