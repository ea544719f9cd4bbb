// Summary statistics of timing samples: small pure functions (as in google/benchmark).
//
// Conventions: percentiles interpolate linearly between closest ranks (numpy's default);
// stddev is the sample (n-1) standard deviation; the confidence interval of the mean uses
// Student's t. Undefined quantities (stddev of one sample, anything of zero samples) are
// NaN, never a made-up 0, and are printed as null in JSON.
#pragma once

#include <cstddef>
#include <limits>
#include <string>
#include <vector>

#include "plumb/run/statistic_registry.h"

namespace plumb::run {

struct Summary {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  size_t n = 0;
  double mean = kNaN, median = kNaN, min = kNaN, p5 = kNaN, p95 = kNaN, max = kNaN;
  double p50 = kNaN, p90 = kNaN, p99 = kNaN;  // latency percentiles (p50 == median)
  double stddev = kNaN;                       // NaN when n < 2
  double cv = kNaN;                           // stddev / mean
  double ci_half_width = kNaN;                // 95% (or requested) CI of the mean; NaN when n < 2
  double ci_rel = kNaN;                       // ci_half_width / mean
};

// Every statistic of a Summary but n, once: the store's columns of a run (named so), its reads
// and writes, a run's JSON ("step_time", or "latency" for the per-step latency percentiles)
// and the CSV export's columns all walk this list, in this order; summarize computes each
// through its registered statistic (statistic_registry.h), which says how.
struct SummaryStatistic {
  const char* name;
  double Summary::*value;
  bool latency;                // one of the latency percentiles (the run JSON's "latency" object)
  const Statistic* statistic;  // how it is computed
  double q;                    // the percentiles' quantile (0 for the others)
};
inline constexpr SummaryStatistic kSummaryStatistics[] = {
    {"mean", &Summary::mean, false, &statistic::kMean, 0},
    {"median", &Summary::median, false, &statistic::kMedian, 0},
    {"min", &Summary::min, false, &statistic::kMin, 0},
    {"p5", &Summary::p5, false, &statistic::kPercentile, 0.05},
    {"p95", &Summary::p95, false, &statistic::kPercentile, 0.95},
    {"max", &Summary::max, false, &statistic::kMax, 0},
    {"stddev", &Summary::stddev, false, &statistic::kStddev, 0},
    {"cv", &Summary::cv, false, &statistic::kCv, 0},
    {"ci_rel", &Summary::ci_rel, false, &statistic::kCiRel, 0},
    {"ci_half_width", &Summary::ci_half_width, false, &statistic::kCiHalfWidth, 0},
    {"p50", &Summary::p50, true, &statistic::kPercentile, 0.50},
    {"p90", &Summary::p90, true, &statistic::kPercentile, 0.90},
    {"p99", &Summary::p99, true, &statistic::kPercentile, 0.99}};

// How a summary column is computed: its statistic's line, with the quantile of a percentile
// ("percentile at q = 0.95: ...").
std::string how_computed(const SummaryStatistic& column);

double mean_of(const std::vector<double>& xs);
double stddev_of(const std::vector<double>& xs);  // sample stddev (n-1)
double median_of(std::vector<double> xs);
// q in [0, 1]; `sorted` ascending.
double percentile_sorted(const std::vector<double>& sorted, double q);
// Two-sided Student-t critical value for `confidence` (e.g. 0.95) with `dof` degrees.
double t_critical(double confidence, double dof);
// Median absolute deviation scaled to estimate a normal stddev (1.4826 * MAD).
double robust_sigma(const std::vector<double>& xs);

Summary summarize(const std::vector<double>& samples, double confidence = 0.95);

}  // namespace plumb::run
