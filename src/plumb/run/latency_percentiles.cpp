// Percentile intervals and the tail-latency rule (see latency_percentiles.h). The binomial
// quantiles and Clopper-Pearson bounds come from Boost.Math.
#include "plumb/run/latency_percentiles.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <boost/math/distributions/binomial.hpp>

#include "plumb/core/errors.h"
#include "plumb/run/stats.h"

namespace plumb::run {

namespace {
constexpr double kNoPercentile = std::numeric_limits<double>::quiet_NaN();
using boost::math::binomial_distribution;
}  // namespace

PercentileEstimate percentile_interval(const std::vector<double>& sorted, double q,
                                       double confidence) {
  PLUMB_ASSERT(q > 0 && q < 1, "a percentile is strictly between 0 and 1");
  PercentileEstimate e{kNoPercentile, kNoPercentile, kNoPercentile, sorted.size()};
  if (sorted.empty()) return e;
  e.value = percentile_sorted(sorted, q);
  // The number of queries below the true q-quantile is Binomial(n, q): the order statistics at
  // its alpha/2 and 1 - alpha/2 quantiles (rounded outwards) bracket the quantile.
  const double alpha = 1 - confidence;
  const auto n = static_cast<double>(sorted.size());
  const binomial_distribution<> below(n, q);
  // P(count < l) <= alpha/2: x_(l) (1-based) is a lower bound; l = 0 means no order statistic is.
  const double l = boost::math::quantile(below, alpha / 2);
  const double u = boost::math::quantile(boost::math::complement(below, alpha / 2));
  if (l >= 1) e.low = sorted[static_cast<size_t>(l) - 1];
  if (u + 1 <= n) e.high = sorted[static_cast<size_t>(u)];
  return e;
}

std::string tail_verdict_name(TailVerdict verdict) {
  switch (verdict) {
    case TailVerdict::kMet:
      return "met";
    case TailVerdict::kMissed:
      return "missed";
    case TailVerdict::kUndecided:
      return "undecided";
  }
  return "undecided";
}

TailCheck check_tail(const std::vector<double>& latencies_s, double q, double bound_s,
                     double confidence) {
  PLUMB_ASSERT(q > 0 && q < 1, "a percentile is strictly between 0 and 1");
  TailCheck c;
  c.min_queries = min_queries_for(q, confidence);
  c.queries = latencies_s.size();
  if (c.queries == 0) return c;
  c.over_bound = static_cast<size_t>(
      std::count_if(latencies_s.begin(), latencies_s.end(), [&](double l) { return l > bound_s; }));
  const auto n = static_cast<double>(c.queries), k = static_cast<double>(c.over_bound);
  c.share_over = k / n;
  const double alpha = 1 - confidence;
  using Binomial = binomial_distribution<>;
  c.share_high = Binomial::find_upper_bound_on_p(n, k, alpha);
  c.share_low = Binomial::find_lower_bound_on_p(n, k, alpha);
  const double allowed = 1 - q;
  if (c.share_high <= allowed)
    c.verdict = TailVerdict::kMet;
  else if (c.share_low > allowed)
    c.verdict = TailVerdict::kMissed;
  return c;
}

size_t min_queries_for(double q, double confidence) {
  PLUMB_ASSERT(q > 0 && q < 1, "a percentile is strictly between 0 and 1");
  return static_cast<size_t>(std::ceil(std::log(1 - confidence) / std::log(q)));
}

}  // namespace plumb::run
