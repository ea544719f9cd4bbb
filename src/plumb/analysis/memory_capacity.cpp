// The largest batch under a memory budget (see memory_capacity.h).
#include "plumb/analysis/memory_capacity.h"

#include <algorithm>
#include <set>

#include "plumb/analysis/memory_scaling.h"

namespace plumb::analysis {
namespace {

// The successful batches in batch order.
std::vector<MeasuredBatch> successful(const std::vector<MeasuredBatch>& measured) {
  std::vector<MeasuredBatch> out;
  for (const auto& m : measured)
    if (m.ok()) out.push_back(m);
  std::sort(out.begin(), out.end(), [](const auto& x, const auto& y) { return x.batch < y.batch; });
  return out;
}

// The straight line of total peak against batch through `points` (two distinct batches at
// least), and where it meets the limit.
int64_t predicted_by_fit(const std::vector<MeasuredBatch>& points, int64_t limit) {
  std::vector<double> x, y;
  for (const auto& p : points) {
    x.push_back(static_cast<double>(p.batch));
    y.push_back(static_cast<double>(p.total_peak));
  }
  return predicted_largest_batch(fit_line(x, y), limit);
}

// The next batch to measure: where the secant through the two largest successful batches
// meets the limit (halving or doubling when there is no secant, or the last batch ran out of
// memory), kept strictly between `fits` and `fails`.
int64_t next_candidate(const std::vector<MeasuredBatch>& points, const CapacityResult& c,
                       bool last_was_out_of_memory) {
  int64_t b = -1;
  if (!last_was_out_of_memory && points.size() >= 2 &&
      points[points.size() - 2].batch != points.back().batch)
    b = predicted_by_fit({points[points.size() - 2], points.back()}, c.limit_bytes);
  if (b < 0) b = c.fails > 0 ? (c.fits + c.fails) / 2 : 2 * c.fits;
  b = std::max(b, c.fits + 1);
  if (c.fails > 0) b = std::min(b, c.fails - 1);
  return b;
}

}  // namespace

CapacityResult find_memory_capacity(int64_t limit, std::vector<MeasuredBatch> measured,
                                    const MeasureBatch& measure) {
  CapacityResult c;
  c.limit_bytes = limit;
  auto one = std::find_if(measured.begin(), measured.end(),
                          [](const auto& m) { return m.batch == 1 && m.ok(); });
  if (one == measured.end()) {
    measured.push_back(measure(1, 0));
    one = std::prev(measured.end());
  }
  if (!one->ok()) {
    c.stop = CapacityStop::kBatchOneFailed;
    return c;
  }
  c.batch1_bytes = one->total_peak;
  if (c.batch1_bytes > limit) {
    c.stop = CapacityStop::kBatchOneOverLimit;
    return c;
  }
  for (const auto& m : measured) {
    const bool within = m.ok() && m.total_peak <= limit;
    if (within) c.fits = std::max(c.fits, m.batch);
    if (!within && (c.fails == 0 || m.batch < c.fails)) c.fails = m.batch;
  }
  const auto first = successful(measured);
  std::set<int64_t> distinct;
  for (const auto& m : first) distinct.insert(m.batch);
  if (distinct.size() >= 2) c.predicted = predicted_by_fit(first, limit);
  bool last_out_of_memory = false;
  for (int attempt = 0; attempt < kCapacityAttempts && (c.fails == 0 || c.fails > c.fits + 1);
       ++attempt) {
    const int64_t b = next_candidate(successful(measured), c, last_out_of_memory);
    const MeasuredBatch m = measure(b, 0);
    measured.push_back(m);
    c.attempts.push_back(m);
    last_out_of_memory = !m.ok();
    (m.ok() && m.total_peak <= limit ? c.fits : c.fails) = b;
  }
  const MeasuredBatch confirm = measure(c.fits, limit);
  if (confirm.ok() && confirm.total_peak <= limit) {
    c.verified = c.fits;
    c.verified_peak = confirm.total_peak;
  }
  return c;
}

}  // namespace plumb::analysis
