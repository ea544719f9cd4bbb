// The --memory-limit search (analysis/memory_capacity.h) on synthetic peaks: it ends on
// adjacent batches (the largest that fits, the smallest that does not), verifies the one that
// fits under the limit, and stops with the reason when batch 1 cannot fit.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <utility>
#include <vector>

#include "plumb/analysis/memory_capacity.h"

namespace plumb::analysis {
namespace {

// A workload whose step peak at batch b is peak(b), out of memory from batch `oom` on (0:
// never); each call is logged.
struct SyntheticWorkload {
  explicit SyntheticWorkload(std::function<int64_t(int64_t)> peak_of, int64_t oom_from = 0)
      : peak(std::move(peak_of)), oom(oom_from) {}
  std::function<int64_t(int64_t)> peak;
  int64_t oom = 0;
  std::vector<std::pair<int64_t, int64_t>> calls;  // batch, limit
  MeasuredBatch operator()(int64_t batch, int64_t limit) {
    calls.emplace_back(batch, limit);
    if (oom > 0 && batch >= oom) return {batch, OutcomeState::kOutOfMemory, 0};
    const int64_t p = peak(batch);
    if (limit > 0 && p > limit) return {batch, OutcomeState::kOutOfMemory, 0};
    return {batch, OutcomeState::kOk, p};
  }
  MeasureBatch measure() {
    return [this](int64_t b, int64_t l) { return (*this)(b, l); };
  }
};

TEST(MemoryCapacity, LinearPeaksEndOnAdjacentBatchesAndVerifyTheOneThatFits) {
  SyntheticWorkload w([](int64_t b) { return 100 + 10 * b; });
  const auto c = find_memory_capacity(1000, {w(4, 0), w(8, 0)}, w.measure());
  ASSERT_EQ(c.stop, CapacityStop::kSearched);
  EXPECT_EQ(c.batch1_bytes, 110);
  EXPECT_EQ(c.predicted, 90);  // the fit over 1, 4 and 8 is exact here
  EXPECT_EQ(c.fits, 90);
  EXPECT_EQ(c.fails, 91);
  EXPECT_EQ(c.verified, 90);
  EXPECT_EQ(c.verified_peak, 1000);
  EXPECT_EQ(w.calls.back(), std::make_pair(int64_t{90}, int64_t{1000}));  // run under the limit
  EXPECT_LE(c.attempts.size(), 3u) << "the secant lands on a linear peak at once";
}

TEST(MemoryCapacity, CurvedPeaksAndOutOfMemoryStillConverge) {
  // Super-linear growth: the first straight line overshoots; out of memory from batch 300.
  SyntheticWorkload w([](int64_t b) { return 1000 + 20 * b + b * b; }, 300);
  const int64_t limit = 50000;
  const auto c = find_memory_capacity(limit, {w(2, 0), w(4, 0)}, w.measure());
  ASSERT_EQ(c.stop, CapacityStop::kSearched);
  // The true answer: the largest b with 1000 + 20 b + b^2 <= 50000 is 211.
  EXPECT_EQ(c.fits, 211);
  EXPECT_EQ(c.fails, 212);
  EXPECT_EQ(c.verified, 211);
  for (const auto& m : c.attempts) EXPECT_TRUE(m.batch > 4) << m.batch;
}

TEST(MemoryCapacity, BatchOneThatCannotFitStopsTheSearchWithTheReason) {
  SyntheticWorkload over([](int64_t b) { return 5000 + b; });
  auto c = find_memory_capacity(1000, {}, over.measure());
  EXPECT_EQ(c.stop, CapacityStop::kBatchOneOverLimit);
  EXPECT_EQ(c.batch1_bytes, 5001);
  EXPECT_EQ(over.calls.size(), 1u);  // batch 1 only, without a limit

  SyntheticWorkload broken([](int64_t) { return int64_t{1}; }, 1);
  c = find_memory_capacity(1000, {}, broken.measure());
  EXPECT_EQ(c.stop, CapacityStop::kBatchOneFailed);
  EXPECT_TRUE(c.attempts.empty());
}

}  // namespace
}  // namespace plumb::analysis
