// Memory-vs-batch fits and capacity prediction (see memory_scaling.h).
#include "plumb/analysis/memory_scaling.h"

#include <cmath>
#include <set>

#include <fmt/format.h>

#include "plumb/core/errors.h"

namespace plumb::analysis {

LineFit fit_line(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size())
    throw UsageError(fmt::format("a line fit needs as many y values as x values ({} vs {})",
                                 y.size(), x.size()));
  if (x.size() < 2)
    throw UsageError(fmt::format("a line fit needs at least two points, got {}", x.size()));
  const auto n = static_cast<double>(x.size());
  double mx = 0, my = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    mx += x[i] / n;
    my += y[i] / n;
  }
  double sxx = 0, sxy = 0, syy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxx += (x[i] - mx) * (x[i] - mx);
    sxy += (x[i] - mx) * (y[i] - my);
    syy += (y[i] - my) * (y[i] - my);
  }
  if (sxx == 0) throw UsageError("a line fit needs at least two distinct x values");
  LineFit f;
  f.n = x.size();
  f.slope = sxy / sxx;
  f.intercept = my - f.slope * mx;
  double residual = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double e = y[i] - (f.intercept + f.slope * x[i]);
    residual += e * e;
  }
  // A constant y is explained perfectly by a flat line.
  f.r_squared = syy == 0 ? 1.0 : 1.0 - residual / syy;
  return f;
}

MemoryScaling fit_memory_scaling(const std::vector<MemoryPoint>& points) {
  std::set<int64_t> batches;
  for (const auto& p : points) batches.insert(p.batch);
  if (batches.size() < 2)
    throw UsageError(
        fmt::format("memory scaling needs successful passes at two or more batch sizes, got {}",
                    batches.size()));
  std::vector<double> x, total;
  for (const auto& p : points) {
    x.push_back(static_cast<double>(p.batch));
    total.push_back(static_cast<double>(p.total_peak));
  }
  MemoryScaling s;
  for (size_t c = 0; c < profile::kMemoryCategoryCount; ++c) {
    std::vector<double> y;
    for (const auto& p : points) y.push_back(static_cast<double>(p.peak[c]));
    s.category.push_back(fit_line(x, y));
  }
  s.total = fit_line(x, total);
  return s;
}

int64_t predicted_largest_batch(const LineFit& total, int64_t limit_bytes) {
  const auto limit = static_cast<double>(limit_bytes);
  // A slope within rounding of zero (a few bytes per example) sets no practical bound.
  if (total.slope <= 1.0) return total.intercept + total.slope <= limit ? -1 : 0;
  const double batch = std::floor((limit - total.intercept) / total.slope);
  return batch < 1 ? 0 : static_cast<int64_t>(batch);
}

}  // namespace plumb::analysis
