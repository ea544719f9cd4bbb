// The registered statistics (see statistic_registry.h). Each computation is the formula the
// figure always had: the summary's through stats.cpp's functions, the percentile interval
// through latency_percentiles.cpp's order statistics.
#include "plumb/run/statistic_registry.h"

#include <algorithm>

#include "plumb/run/latency_percentiles.h"
#include "plumb/run/stats.h"

namespace plumb::run {
namespace {

// A ratio whose denominator is zero has no meaning here (cv, ci_rel); NaN, not inf.
double registry_ratio_or_nan(double num, double den) {
  return den == 0 ? NAN : num / den;
}

Estimate point(double value) {
  return {value, NAN, NAN};
}

double half_width_of_mean(const Samples& s, double confidence) {
  if (s.size() < 2) return NAN;
  const double dof = static_cast<double>(s.size() - 1);
  return t_critical(confidence, dof) * s.stddev() / std::sqrt(static_cast<double>(s.size()));
}

Estimate mean_estimate(const Samples& s, const StatisticParams&) {
  return point(s.mean());
}

Estimate median_estimate(const Samples& s, const StatisticParams&) {
  return point(percentile_sorted(s.sorted(), 0.5));
}

Estimate min_estimate(const Samples& s, const StatisticParams&) {
  return point(s.size() == 0 ? NAN : s.sorted().front());
}

Estimate max_estimate(const Samples& s, const StatisticParams&) {
  return point(s.size() == 0 ? NAN : s.sorted().back());
}

Estimate stddev_estimate(const Samples& s, const StatisticParams&) {
  return point(s.stddev());
}

Estimate cv_estimate(const Samples& s, const StatisticParams&) {
  return point(registry_ratio_or_nan(s.stddev(), s.mean()));
}

Estimate ci_half_width_estimate(const Samples& s, const StatisticParams& p) {
  const double half = half_width_of_mean(s, p.confidence);
  return {half, s.mean() - half, s.mean() + half};
}

Estimate ci_rel_estimate(const Samples& s, const StatisticParams& p) {
  return point(registry_ratio_or_nan(half_width_of_mean(s, p.confidence), s.mean()));
}

Estimate percentile_estimate(const Samples& s, const StatisticParams& p) {
  return point(percentile_sorted(s.sorted(), p.q));
}

Estimate percentile_interval_estimate(const Samples& s, const StatisticParams& p) {
  const PercentileEstimate e = percentile_interval(s.sorted(), p.q, p.confidence);
  return {e.value, e.low, e.high};
}

Estimate prediction_interval_estimate(const Samples& s, const StatisticParams& p) {
  KnownSpread k;
  if (p.spread) {
    k = *p.spread;
  } else {
    std::vector<double> logs;
    for (double x : s.measured()) logs.push_back(std::log(x));
    k = {s.mean(), stddev_of(logs), static_cast<double>(s.size()) - 1,
         static_cast<double>(s.size())};
  }
  const double half = t_critical(p.confidence, k.dof) * k.log_sd * std::sqrt(1 + 1.0 / k.runs);
  return {k.center, k.center * std::exp(-half), k.center * std::exp(half)};
}

}  // namespace

Samples::Samples(const std::vector<double>& measured) : measured_(measured), sorted_(measured) {
  std::sort(sorted_.begin(), sorted_.end());
}

double Samples::mean() const {
  if (!mean_) mean_ = mean_of(measured_);
  return *mean_;
}

double Samples::stddev() const {
  if (!stddev_) stddev_ = stddev_of(measured_);
  return *stddev_;
}

namespace statistic {
const Statistic kMean{
    "mean", "arithmetic mean: the first sample plus the mean offset of every sample from it",
    &mean_estimate};
const Statistic kMedian{
    "median",
    "middle sample of the sorted ones; the midpoint of the two middle ones when n is even",
    &median_estimate};
const Statistic kMin{"min", "smallest sample", &min_estimate};
const Statistic kMax{"max", "largest sample", &max_estimate};
const Statistic kStddev{"stddev",
                        "sample standard deviation: sqrt(sum of squared deviations from the mean "
                        "/ (n - 1)); undefined below 2 samples",
                        &stddev_estimate};
const Statistic kCv{"cv", "coefficient of variation: stddev / mean", &cv_estimate};
const Statistic kCiHalfWidth{
    "ci_half_width",
    "half width of the confidence interval of the mean: t(confidence, n - 1) * stddev / sqrt(n) "
    "(Student's t); low, high: mean -/+ it",
    &ci_half_width_estimate};
const Statistic kCiRel{"ci_rel", "ci_half_width / mean", &ci_rel_estimate};
const Statistic kPercentile{
    "percentile",
    "q-quantile interpolated linearly between the sorted samples at rank q * (n - 1) (numpy's "
    "default)",
    &percentile_estimate};
const Statistic kPercentileInterval{
    "percentile_interval",
    "percentile q with a distribution-free interval: the order statistics at the (1 -/+ "
    "confidence) / 2 quantiles of Binomial(n, q), rounded outwards; unbounded sides are NaN",
    &percentile_interval_estimate};
const Statistic kPredictionInterval{
    "prediction_interval",
    "where one more run lands: mean * exp(-/+ t(confidence, dof) * s * sqrt(1 + 1 / n)), s the "
    "standard deviation of log samples (dof n - 1) or a between-run spread known from more runs",
    &prediction_interval_estimate};
}  // namespace statistic

const std::vector<const Statistic*>& registered_statistics() {
  using namespace statistic;
  static const std::vector<const Statistic*> all = {&kMean,
                                                    &kMedian,
                                                    &kMin,
                                                    &kMax,
                                                    &kStddev,
                                                    &kCv,
                                                    &kCiHalfWidth,
                                                    &kCiRel,
                                                    &kPercentile,
                                                    &kPercentileInterval,
                                                    &kPredictionInterval};
  return all;
}

const Statistic* find_statistic(std::string_view name) {
  for (const Statistic* s : registered_statistics())
    if (name == s->name) return s;
  return nullptr;
}

}  // namespace plumb::run
