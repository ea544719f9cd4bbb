// Unit tests for the timing summary statistics (plumb/run/stats.h): edge cases where values
// are undefined, hand-computed reference values, and robustness to outliers.
#include "plumb/run/stats.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

namespace plumb::run {
namespace {

const std::vector<double> kOneToTen = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};

// Deterministic, spread-out timings around 10 ms without a random generator.
std::vector<double> timings_around_10ms(size_t n) {
  std::vector<double> xs;
  for (size_t i = 0; i < n; ++i) xs.push_back(0.010 + 0.0002 * static_cast<double>(i % 7) - 0.0006);
  return xs;
}

TEST(Stats, EmptySeriesIsAllNaN) {
  const Summary s = summarize({});
  EXPECT_EQ(s.n, 0u);
  for (double v : {s.mean, s.median, s.min, s.p5, s.p95, s.max, s.p50, s.p90, s.p99, s.stddev, s.cv,
                   s.ci_half_width, s.ci_rel}) {
    EXPECT_TRUE(std::isnan(v));
  }
  EXPECT_TRUE(std::isnan(mean_of({})));
  EXPECT_TRUE(std::isnan(stddev_of({})));
  EXPECT_TRUE(std::isnan(median_of({})));
  EXPECT_TRUE(std::isnan(percentile_sorted({}, 0.5)));
  EXPECT_TRUE(std::isnan(robust_sigma({})));
}

TEST(Stats, SingleSampleHasLocationButNoSpread) {
  const Summary s = summarize({0.25});
  EXPECT_EQ(s.n, 1u);
  for (double v : {s.mean, s.median, s.min, s.p5, s.p95, s.max, s.p50, s.p90, s.p99}) {
    EXPECT_DOUBLE_EQ(v, 0.25);
  }
  EXPECT_TRUE(std::isnan(s.stddev));
  EXPECT_TRUE(std::isnan(s.cv));
  EXPECT_TRUE(std::isnan(s.ci_half_width));
  EXPECT_TRUE(std::isnan(s.ci_rel));
  EXPECT_TRUE(std::isnan(stddev_of({0.25})));
}

TEST(Stats, TwoSamples) {
  const Summary s = summarize({3, 1});
  EXPECT_EQ(s.n, 2u);
  EXPECT_DOUBLE_EQ(s.mean, 2);
  EXPECT_DOUBLE_EQ(s.median, 2);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 3);
  EXPECT_DOUBLE_EQ(s.p5, 1.1);
  EXPECT_DOUBLE_EQ(s.p95, 2.9);
  EXPECT_DOUBLE_EQ(s.stddev, std::sqrt(2.0));
  // One degree of freedom: t = 12.706, and stddev / sqrt(2) = 1.
  EXPECT_NEAR(s.ci_half_width, 12.7062, 1e-3);
  EXPECT_NEAR(s.ci_rel, 12.7062 / 2, 1e-3);
  EXPECT_NEAR(s.cv, std::sqrt(2.0) / 2, 1e-12);
}

TEST(Stats, ConstantSeriesHasExactlyZeroSpread) {
  // 0.1 is not representable; a naive mean would leave a residual and a tiny non-zero stddev.
  const Summary s = summarize(std::vector<double>(7, 0.1));
  EXPECT_EQ(s.mean, 0.1);
  EXPECT_EQ(s.median, 0.1);
  EXPECT_EQ(s.stddev, 0.0);
  EXPECT_EQ(s.cv, 0.0);
  EXPECT_EQ(s.ci_half_width, 0.0);
  EXPECT_EQ(s.ci_rel, 0.0);
  EXPECT_EQ(robust_sigma(std::vector<double>(7, 0.1)), 0.0);
}

TEST(Stats, OneToTenMatchesHandComputedValues) {
  const Summary s = summarize(kOneToTen);
  EXPECT_EQ(s.n, 10u);
  EXPECT_DOUBLE_EQ(s.mean, 5.5);
  EXPECT_DOUBLE_EQ(s.median, 5.5);
  EXPECT_DOUBLE_EQ(s.p50, s.median);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 10);
  EXPECT_NEAR(s.p5, 1.45, 1e-12);
  EXPECT_NEAR(s.p90, 9.1, 1e-12);
  EXPECT_NEAR(s.p95, 9.55, 1e-12);
  EXPECT_NEAR(s.p99, 9.91, 1e-12);
  EXPECT_NEAR(s.stddev, 3.0276503540974917, 1e-12);  // sqrt(82.5 / 9)
  EXPECT_NEAR(s.cv, 3.0276503540974917 / 5.5, 1e-12);
  EXPECT_NEAR(s.ci_half_width, 2.1658505896, 1e-8);  // 2.2621572 * stddev / sqrt(10)
  EXPECT_NEAR(s.ci_rel, 2.1658505896 / 5.5, 1e-8);
}

TEST(Stats, SummarizeLeavesInputUntouched) {
  const std::vector<double> xs = {5, 1, 4, 2, 3};
  const std::vector<double> copy = xs;
  summarize(xs);
  EXPECT_EQ(xs, copy);
}

TEST(Stats, RequestedConfidenceWidensInterval) {
  const Summary s95 = summarize(kOneToTen, 0.95);
  const Summary s99 = summarize(kOneToTen, 0.99);
  EXPECT_NEAR(s99.ci_half_width, 3.2498355 * s95.stddev / std::sqrt(10.0), 1e-6);
  EXPECT_GT(s99.ci_half_width, s95.ci_half_width);
}

TEST(Stats, MedianOfOddAndEvenCounts) {
  EXPECT_DOUBLE_EQ(median_of({7}), 7);
  EXPECT_DOUBLE_EQ(median_of({9, 1, 5}), 5);
  EXPECT_DOUBLE_EQ(median_of({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(median_of({10, 10, 0, 0}), 5);
}

TEST(Stats, PercentileEndsAndInterpolation) {
  const std::vector<double> sorted = {10, 20, 30, 40};
  EXPECT_DOUBLE_EQ(percentile_sorted(sorted, 0), 10);
  EXPECT_DOUBLE_EQ(percentile_sorted(sorted, 1), 40);
  EXPECT_DOUBLE_EQ(percentile_sorted(sorted, 0.5), 25);
  EXPECT_DOUBLE_EQ(percentile_sorted(sorted, 0.25), 17.5);  // rank 0.75
  EXPECT_DOUBLE_EQ(percentile_sorted({3}, 0.99), 3);
}

TEST(Stats, TCriticalKnownValues) {
  EXPECT_NEAR(t_critical(0.95, 1), 12.706, 1e-3);
  EXPECT_NEAR(t_critical(0.95, 9), 2.262, 1e-3);
  EXPECT_NEAR(t_critical(0.95, 30), 2.042, 1e-3);
  EXPECT_NEAR(t_critical(0.95, 1e6), 1.960, 1e-3);
  EXPECT_NEAR(t_critical(0.99, 10), 3.169, 1e-3);
  EXPECT_NEAR(t_critical(0.90, 5), 2.015, 1e-3);
  EXPECT_TRUE(std::isnan(t_critical(0.95, 0)));
  EXPECT_TRUE(std::isnan(t_critical(1.5, 5)));
}

TEST(Stats, RobustSigmaKnownValue) {
  // median 3; absolute deviations {2, 1, 0, 1, 97}; their median is 1.
  EXPECT_DOUBLE_EQ(robust_sigma({1, 2, 3, 4, 100}), 1.4826);
  // For the 1..10 ramp the deviations from 5.5 are {0.5, 0.5, 1.5, 1.5, ...}; median 2.5.
  EXPECT_DOUBLE_EQ(robust_sigma(kOneToTen), 1.4826 * 2.5);
}

TEST(Stats, OneOutlierMovesMeanAndMaxButNotRobustFigures) {
  const std::vector<double> clean = timings_around_10ms(100);
  std::vector<double> spiked = clean;
  spiked[50] = 1.0;  // a 100x stall, e.g. a page-fault storm

  const Summary a = summarize(clean);
  const Summary b = summarize(spiked);
  EXPECT_EQ(b.max, 1.0);
  EXPECT_GT(b.mean, a.mean * 1.9);  // 0.99 s / 100 samples adds ~10 ms
  EXPECT_GT(b.stddev, a.stddev * 50);
  EXPECT_NEAR(b.median, a.median, 1e-12);
  EXPECT_NEAR(b.p5, a.p5, 1e-12);
  EXPECT_NEAR(robust_sigma(spiked), robust_sigma(clean), 0.05 * robust_sigma(clean));
}

TEST(Stats, ConfidenceIntervalShrinksWithMoreSamples) {
  const Summary s10 = summarize(timings_around_10ms(14));
  const Summary s100 = summarize(timings_around_10ms(140));
  const Summary s1000 = summarize(timings_around_10ms(1400));
  EXPECT_GT(s10.ci_half_width, s100.ci_half_width);
  EXPECT_GT(s100.ci_half_width, s1000.ci_half_width);
  // Same spread, 10x the samples: about sqrt(10) narrower (t also drops for small n).
  EXPECT_NEAR(s100.ci_half_width / s1000.ci_half_width, std::sqrt(10.0), 0.1);
  EXPECT_LT(s1000.ci_rel, 0.003);  // cv is about 4%
}

TEST(Stats, ZeroMeanGivesNaNRatiosNotInfinity) {
  const Summary s = summarize({-1, 1});
  EXPECT_DOUBLE_EQ(s.mean, 0);
  EXPECT_DOUBLE_EQ(s.stddev, std::sqrt(2.0));
  EXPECT_TRUE(std::isnan(s.cv));
  EXPECT_TRUE(std::isnan(s.ci_rel));
  EXPECT_FALSE(std::isnan(s.ci_half_width));
}

}  // namespace
}  // namespace plumb::run
