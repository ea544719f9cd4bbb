// How a workload's memory scales with the mini-batch (TBD Fig. 8 / Sec. IV-B): a straight-line
// fit of each category's peak against batch size (feature maps grow per example, weights do
// not), and from the fit of the total, the largest batch predicted to fit a memory budget.
#pragma once

#include <cstdint>
#include <vector>

#include "plumb/profile/memory_breakdown.h"

namespace plumb::analysis {

struct LineFit {
  double slope = 0;      // y per unit of x (bytes per example)
  double intercept = 0;  // y at x = 0 (bytes independent of the batch)
  double r_squared = 0;  // 1 when every point is on the line (also when y is constant)
  size_t n = 0;
};

// Ordinary least squares. Throws UsageError for fewer than two points, mismatched sizes or x
// values that are all equal (no slope is defined).
LineFit fit_line(const std::vector<double>& x, const std::vector<double>& y);

struct MemoryPoint {
  int64_t batch = 0;
  profile::CategoryBytes peak{};
  int64_t total_peak = 0;
};

struct MemoryScaling {
  std::vector<LineFit> category;  // one per profile::MemoryCategory, in category order
  LineFit total;                  // of total_peak
};

// Needs at least two distinct batch sizes (UsageError otherwise).
MemoryScaling fit_memory_scaling(const std::vector<MemoryPoint>& points);

// The largest batch whose predicted total peak stays within `limit_bytes`: 0 when even batch 1
// is predicted over it, -1 when the total does not grow with the batch (no bound from the fit).
int64_t predicted_largest_batch(const LineFit& total, int64_t limit_bytes);

}  // namespace plumb::analysis
