// Warm-up detection: is the tail of a series of iteration times stationary (see steady_state.h)?
#include "plumb/run/steady_state.h"

#include <algorithm>
#include <cmath>

#include "plumb/run/stats.h"

namespace plumb::run {
namespace {

constexpr size_t kWindows = 3;

struct TailWindows {
  double medians[kWindows];  // oldest first
  double overall_median;     // of all 3 * window samples
  double noise_sigma;        // robust stddev of samples around their own window's median
};

// Residuals are taken within each window so that a step or drift between windows does not
// inflate the noise estimate and then excuse itself.
TailWindows describe_tail(const std::vector<double>& tail, size_t window) {
  TailWindows t{};
  std::vector<double> residuals;
  residuals.reserve(tail.size());
  for (size_t k = 0; k < kWindows; ++k) {
    const auto first = tail.begin() + static_cast<std::ptrdiff_t>(k * window);
    const std::vector<double> xs(first, first + static_cast<std::ptrdiff_t>(window));
    t.medians[k] = median_of(xs);
    for (double x : xs) residuals.push_back(x - t.medians[k]);
  }
  t.overall_median = median_of(tail);
  t.noise_sigma = robust_sigma(residuals);
  return t;
}

bool is_monotone(const double (&m)[kWindows]) {
  return (m[0] < m[1] && m[1] < m[2]) || (m[0] > m[1] && m[1] > m[2]);
}

}  // namespace

bool tail_is_steady(const std::vector<double>& series, const SteadyStateOptions& options) {
  const size_t w = options.window;
  if (w == 0 || series.size() < kWindows * w) return false;
  const std::vector<double> tail(series.end() - static_cast<std::ptrdiff_t>(kWindows * w),
                                 series.end());
  if (!std::all_of(tail.begin(), tail.end(), [](double x) { return std::isfinite(x); })) {
    return false;
  }

  const TailWindows t = describe_tail(tail, w);
  const auto [lo, hi] = std::minmax_element(std::begin(t.medians), std::end(t.medians));
  const double relative = options.rel_tolerance * t.overall_median;
  const double noise = options.noise_z * t.noise_sigma / std::sqrt(static_cast<double>(w));
  const double tolerance = std::max(relative, noise);
  if (*hi - *lo > tolerance) return false;

  // A steady drift can stay inside the tolerance window by window; a monotone run of
  // medians that has already moved half the relative tolerance is still warming up.
  const double trend = std::fabs(t.medians[2] - t.medians[0]);
  return !(is_monotone(t.medians) && trend > relative / 2);
}

size_t first_steady_index(const std::vector<double>& series, const SteadyStateOptions& options) {
  std::vector<double> seen;
  seen.reserve(series.size());
  for (double x : series) {
    seen.push_back(x);
    if (tail_is_steady(seen, options)) return seen.size();
  }
  return series.size() + 1;
}

}  // namespace plumb::run
