// Tail latency of a serving run, and when it can be trusted: a percentile with a distribution-free
// confidence interval (order statistics), and the rule plumb serve uses to decide whether a
// latency bound holds at a percentile — the counting argument MLPerf LoadGen's early stopping
// makes, stated here as a one-sided Clopper-Pearson bound on the share of queries over the bound.
//
// Rule (docs/serving.md): of n queries, k finished later than the bound. The bound holds at
// percentile q when the true share over it is at most 1 - q. At confidence c:
//   met       the upper confidence bound on that share is at most 1 - q;
//   missed    its lower confidence bound is above 1 - q;
//   undecided otherwise (more queries would tell).
// With k = 0, "met" needs n >= ln(1 - c) / ln(q): 299 queries for p99 at 95%, 29 for p90, 2995
// for p99.9 — the minimum query count a run must reach before it can pass.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace plumb::run {

inline constexpr double kTailConfidence = 0.95;

struct PercentileEstimate {
  double value;      // linear interpolation between closest ranks (stats.h's convention)
  double low, high;  // order statistics that bracket the true percentile with the confidence;
                     // NaN on a side the queries cannot bound (too few of them)
  size_t queries = 0;
};

// `sorted` ascending; q in (0, 1).
PercentileEstimate percentile_interval(const std::vector<double>& sorted, double q,
                                       double confidence = kTailConfidence);

enum class TailVerdict { kMet, kMissed, kUndecided };
std::string tail_verdict_name(TailVerdict verdict);

struct TailCheck {
  TailVerdict verdict = TailVerdict::kUndecided;
  size_t queries = 0, over_bound = 0;
  double share_over = 0;                 // over_bound / queries
  double share_low = 0, share_high = 1;  // its one-sided confidence bounds
  size_t min_queries = 0;                // min_queries_for(q, confidence)
};

// Applies the rule above to latencies (any order), bound in seconds.
TailCheck check_tail(const std::vector<double>& latencies_s, double q, double bound_s,
                     double confidence = kTailConfidence);

// The fewest queries with which a run can show that percentile q holds (none over the bound).
size_t min_queries_for(double q, double confidence = kTailConfidence);

}  // namespace plumb::run
