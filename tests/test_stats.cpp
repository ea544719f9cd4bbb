// Unit tests for the timing summary statistics (plumb/run/stats.h) and the registered
// statistics behind them (statistic_registry.h): edge cases where values are undefined,
// hand-computed reference values, and robustness to outliers.
#include "plumb/run/stats.h"

#include <cmath>
#include <map>
#include <string>
#include <utility>
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

// The registered statistics on a small sample against the hand calculation (n = 8, mean 5,
// squared deviations 32, so s = sqrt(32 / 7); t(0.95, 7) = 2.364624).
TEST(Stats, EveryRegisteredStatisticMatchesAHandCalculation) {
  const std::vector<double> xs = {5, 2, 9, 4, 7, 4, 5, 4};  // sorted: 2 4 4 4 5 5 7 9
  const Samples sample(xs);
  const double s = std::sqrt(32.0 / 7), t7 = 2.364624;
  const double half = t7 * s / std::sqrt(8.0);
  double log_mean = 0, log_sq = 0;
  for (double x : xs) log_mean += std::log(x) / 8;
  for (double x : xs) log_sq += (std::log(x) - log_mean) * (std::log(x) - log_mean);
  const double predict = t7 * std::sqrt(log_sq / 7) * std::sqrt(1 + 1.0 / 8);
  const double nan = std::nan("");
  // name -> the parameters and the expected value, low, high (NaN: not an interval).
  const std::map<std::string, std::pair<StatisticParams, Estimate>> expected = {
      {"mean", {{}, {5, nan, nan}}},
      {"median", {{}, {4.5, nan, nan}}},
      {"min", {{}, {2, nan, nan}}},
      {"max", {{}, {9, nan, nan}}},
      {"stddev", {{}, {s, nan, nan}}},
      {"cv", {{}, {s / 5, nan, nan}}},
      {"ci_half_width", {{}, {half, 5 - half, 5 + half}}},
      {"ci_rel", {{}, {half / 5, nan, nan}}},
      // Rank 0.9 * 7 = 6.3: 7 + 0.3 * (9 - 7).
      {"percentile", {{0.9, 0.95, {}}, {7.6, nan, nan}}},
      // Binomial(8, 1/2): its 2.5% quantile lies between 0 and 1 (P(count <= 0) = 1/256,
      // P(count <= 1) = 9/256), rounded outwards to 0: no order statistic bounds the median
      // from below; its 97.5% quantile lies between 6 and 7, rounded up to 7: x(8) = 9 above.
      {"percentile_interval", {{0.5, 0.95, {}}, {4.5, nan, 9}}},
      {"prediction_interval", {{}, {5, 5 * std::exp(-predict), 5 * std::exp(predict)}}}};
  const auto same = [](double got, double want) {
    return std::isnan(want) ? std::isnan(got) : std::fabs(got - want) <= 1e-5 * std::fabs(want);
  };
  for (const Statistic* statistic : registered_statistics()) {
    SCOPED_TRACE(statistic->name);
    EXPECT_GT(std::string(statistic->how).size(), 10u);
    EXPECT_EQ(find_statistic(statistic->name), statistic);
    const auto want = expected.find(statistic->name);
    ASSERT_NE(want, expected.end()) << "a registered statistic without a hand calculation";
    const Estimate got = statistic->compute(sample, want->second.first);
    EXPECT_TRUE(same(got.value, want->second.second.value)) << got.value;
    EXPECT_TRUE(same(got.low, want->second.second.low)) << got.low;
    EXPECT_TRUE(same(got.high, want->second.second.high)) << got.high;
  }
  EXPECT_EQ(find_statistic("mode"), nullptr);
}

// A spread known from more runs (plumb tune's between-run spread) replaces the sample's own.
TEST(Stats, PredictionIntervalTakesAKnownSpread) {
  const std::vector<double> none;
  const Estimate e = statistic::kPredictionInterval.compute(
      Samples(none), {0.5, 0.95, KnownSpread{100, 0.1, 4, 3}});
  const double half = t_critical(0.95, 4) * 0.1 * std::sqrt(1 + 1.0 / 3);
  EXPECT_DOUBLE_EQ(e.value, 100);
  EXPECT_DOUBLE_EQ(e.low, 100 * std::exp(-half));
  EXPECT_DOUBLE_EQ(e.high, 100 * std::exp(half));
}

// The summary's columns say how each is computed, through a registered statistic.
TEST(Stats, EverySummaryColumnSaysHowItIsComputed) {
  for (const auto& column : kSummaryStatistics) {
    SCOPED_TRACE(column.name);
    ASSERT_NE(column.statistic, nullptr);
    EXPECT_EQ(find_statistic(column.statistic->name), column.statistic);
    EXPECT_FALSE(how_computed(column).empty());
  }
  EXPECT_EQ(how_computed(kSummaryStatistics[3]).rfind("percentile at q = 0.05: ", 0), 0u);
}

}  // namespace
}  // namespace plumb::run
