// Summary statistics of timing samples (see stats.h for the conventions).
#include "plumb/run/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <boost/math/distributions/students_t.hpp>

#include "plumb/core/errors.h"

namespace plumb::run {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Scales a median absolute deviation to a normal stddev: 1 / Phi^-1(3/4).
constexpr double kMadToSigma = 1.4826;

}  // namespace

double mean_of(const std::vector<double>& xs) {
  if (xs.empty()) return kNaN;
  // Summing offsets from the first sample keeps precision for nearly equal timings and makes
  // the mean of a constant series exactly that constant (so its stddev is exactly 0).
  const double origin = xs.front();
  double offset_sum = 0;
  for (double x : xs) offset_sum += x - origin;
  return origin + offset_sum / static_cast<double>(xs.size());
}

double stddev_of(const std::vector<double>& xs) {
  if (xs.size() < 2) return kNaN;
  // Two passes: the one-pass sum-of-squares formula cancels badly for tight timings.
  const double mean = mean_of(xs);
  double sq_sum = 0;
  for (double x : xs) sq_sum += (x - mean) * (x - mean);
  return std::sqrt(sq_sum / static_cast<double>(xs.size() - 1));
}

double median_of(std::vector<double> xs) {
  if (xs.empty()) return kNaN;
  const size_t mid = xs.size() / 2;
  std::nth_element(xs.begin(), xs.begin() + mid, xs.end());
  const double upper = xs[mid];
  if (xs.size() % 2 == 1) return upper;
  // After nth_element everything before `mid` is <= upper; its largest is the lower middle.
  const double lower = *std::max_element(xs.begin(), xs.begin() + mid);
  return lower + (upper - lower) / 2;
}

double percentile_sorted(const std::vector<double>& sorted, double q) {
  PLUMB_ASSERT(q >= 0 && q <= 1, "a percentile outside [0, 1]");
  PLUMB_ASSERT(std::is_sorted(sorted.begin(), sorted.end()), "percentile of unsorted samples");
  if (sorted.empty()) return kNaN;
  q = std::clamp(q, 0.0, 1.0);
  const double rank = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = rank - static_cast<double>(lo);
  return sorted[lo] + frac * (sorted[hi] - sorted[lo]);
}

double t_critical(double confidence, double dof) {
  if (!(dof > 0) || !(confidence > 0 && confidence < 1)) return kNaN;
  const boost::math::students_t dist(dof);
  return boost::math::quantile(dist, 1 - (1 - confidence) / 2);
}

double robust_sigma(const std::vector<double>& xs) {
  if (xs.empty()) return kNaN;
  const double center = median_of(xs);
  std::vector<double> deviations;
  deviations.reserve(xs.size());
  for (double x : xs) deviations.push_back(std::fabs(x - center));
  return kMadToSigma * median_of(std::move(deviations));
}

std::string how_computed(const SummaryStatistic& column) {
  if (column.statistic == &statistic::kPercentile)
    return fmt::format("percentile at q = {:g}: {}", column.q, column.statistic->how);
  return column.statistic->how;
}

Summary summarize(const std::vector<double>& samples, double confidence) {
  Summary s;  // every statistic NaN until computed
  s.n = samples.size();
  if (samples.empty()) return s;
  // Sorting a NaN breaks the ordering std::sort relies on; a NaN timing is a runner bug.
  PLUMB_ASSERT(std::none_of(samples.begin(), samples.end(), [](double x) { return std::isnan(x); }),
               "a NaN sample reached the statistics");
  // Below two samples the spread statistics are NaN by their own definitions.
  const Samples sample(samples);
  for (const auto& column : kSummaryStatistics)
    s.*column.value = column.statistic->compute(sample, {column.q, confidence, {}}).value;
  return s;
}

}  // namespace plumb::run
