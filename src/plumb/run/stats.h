// Summary statistics of timing samples: small pure functions (as in google/benchmark).
//
// Conventions: percentiles interpolate linearly between closest ranks (numpy's default);
// stddev is the sample (n-1) standard deviation; the confidence interval of the mean uses
// Student's t. Undefined quantities (stddev of one sample, anything of zero samples) are
// NaN, never a made-up 0, and are printed as null in JSON.
#pragma once

#include <cstddef>
#include <limits>
#include <vector>

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
// and the CSV export's columns all walk this list, in this order.
struct SummaryStatistic {
  const char* name;
  double Summary::*value;
  bool latency;  // one of the latency percentiles (the run JSON's "latency" object)
};
inline constexpr SummaryStatistic kSummaryStatistics[] = {
    {"mean", &Summary::mean, false},     {"median", &Summary::median, false},
    {"min", &Summary::min, false},       {"p5", &Summary::p5, false},
    {"p95", &Summary::p95, false},       {"max", &Summary::max, false},
    {"stddev", &Summary::stddev, false}, {"cv", &Summary::cv, false},
    {"ci_rel", &Summary::ci_rel, false}, {"ci_half_width", &Summary::ci_half_width, false},
    {"p50", &Summary::p50, true},        {"p90", &Summary::p90, true},
    {"p99", &Summary::p99, true}};

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
