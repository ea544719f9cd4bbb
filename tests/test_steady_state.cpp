// Unit tests for warm-up detection (plumb/run/steady_state.h) on synthetic iteration-time
// series: a step, a slow drift, heavy and light stationary noise, and malformed tails.
#include "plumb/run/steady_state.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace plumb::run {
namespace {

// std::normal_distribution differs between standard libraries; mt19937 does not, so the
// gaussian is drawn by hand (Box-Muller) to keep these series identical everywhere.
class Noise {
 public:
  explicit Noise(uint32_t seed) : gen_(seed) {}
  double gaussian() {
    const double u1 = uniform_open();
    const double u2 = uniform_open();
    return std::sqrt(-2 * std::log(u1)) * std::cos(kTwoPi * u2);
  }
  // A sample of `value` with relative gaussian noise of `rel_sd`.
  double around(double value, double rel_sd) { return value * (1 + rel_sd * gaussian()); }

 private:
  static constexpr double kTwoPi = 6.283185307179586;
  double uniform_open() { return (static_cast<double>(gen_()) + 0.5) / 4294967296.0; }
  std::mt19937 gen_;
};

std::vector<double> stationary(uint32_t seed, size_t n, double rel_sd) {
  Noise noise(seed);
  std::vector<double> xs;
  for (size_t i = 0; i < n; ++i) xs.push_back(noise.around(1.0, rel_sd));
  return xs;
}

// `slow` iterations at 2.0 then `fast` at 1.0 (e.g. caches and allocator pools warming up).
std::vector<double> step(uint32_t seed, size_t slow, size_t fast, double rel_sd) {
  Noise noise(seed);
  std::vector<double> xs;
  for (size_t i = 0; i < slow; ++i) xs.push_back(noise.around(2.0, rel_sd));
  for (size_t i = 0; i < fast; ++i) xs.push_back(noise.around(1.0, rel_sd));
  return xs;
}

// 1.0 shrinking by `rate` per iteration for `drifting` iterations, then flat for `flat`.
std::vector<double> drift_then_flat(uint32_t seed, double rate, size_t drifting, size_t flat,
                                    double rel_sd) {
  Noise noise(seed);
  std::vector<double> xs;
  double level = 1.0;
  for (size_t i = 0; i < drifting; ++i, level *= 1 - rate) {
    xs.push_back(noise.around(level, rel_sd));
  }
  for (size_t i = 0; i < flat; ++i) xs.push_back(noise.around(level, rel_sd));
  return xs;
}

std::vector<double> prefix(const std::vector<double>& xs, size_t n) {
  return std::vector<double>(xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(n));
}

TEST(SteadyState, StepIsRejectedWhileInsideTheTailAndAcceptedAfterIt) {
  const SteadyStateOptions opt;  // window 5
  const size_t w = opt.window;
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    const std::vector<double> xs = step(seed, 30, 60, 0.01);
    // The 30 slow iterations are themselves stationary.
    EXPECT_TRUE(tail_is_steady(prefix(xs, 30), opt)) << "seed " << seed;
    // Once at least 3 fast samples sit in the newest window (its median moved) and at least
    // 3 slow ones in the oldest, the medians straddle the step.
    for (size_t n = 30 + 3; n <= 30 + 3 * w - 3; ++n) {
      EXPECT_FALSE(tail_is_steady(prefix(xs, n), opt)) << "seed " << seed << ", n " << n;
    }
    size_t after = 30 + 3 * w - 2;
    while (after <= xs.size() && !tail_is_steady(prefix(xs, after), opt)) ++after;
    EXPECT_GT(after, 30 + w) << "seed " << seed;
    EXPECT_LT(after, 30 + 4 * w + 1) << "seed " << seed;
  }
}

TEST(SteadyState, ShortSlowStartEndsWarmUpSoonAfterTheStep) {
  const SteadyStateOptions opt;
  const size_t w = opt.window;
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    const std::vector<double> xs = step(seed, 2 * w, 80, 0.01);
    const size_t first = first_steady_index(xs, opt);
    // Earliest possible: the oldest window holds only 2 slow samples, so its median is fast.
    EXPECT_GE(first, 2 * w + 3 * w - 2) << "seed " << seed;
    EXPECT_LE(first, 2 * w + 4 * w) << "seed " << seed;
  }
}

// 60 steps drifting by `rate` per step, then flat, with relative noise `noise`, for 20 seeds:
// never steady while drifting, steady within four windows after it stops. Returns each seed's
// first steady index.
std::vector<size_t> expect_steady_only_after_drift(double rate, double noise) {
  const SteadyStateOptions opt;
  const size_t w = opt.window;
  std::vector<size_t> firsts;
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    const std::vector<double> xs = drift_then_flat(seed, rate, 60, 60, noise);
    for (size_t n = 3 * w; n <= 60; ++n) {
      EXPECT_FALSE(tail_is_steady(prefix(xs, n), opt)) << "seed " << seed << ", n " << n;
    }
    firsts.push_back(first_steady_index(xs, opt));
    EXPECT_LE(firsts.back(), 60 + 4 * w) << "seed " << seed;
  }
  return firsts;
}

TEST(SteadyState, SlowDriftIsNotSteadyUntilItStops) {
  for (size_t first : expect_steady_only_after_drift(0.01, 0.005)) EXPECT_GT(first, 60u);
}

TEST(SteadyState, DriftWithinTheToleranceIsCaughtByTheTrendTest) {
  // 0.25% per iteration: window medians move ~1.25% apart, so all three stay within the 3%
  // tolerance; only their monotone order shows the series is still moving.
  expect_steady_only_after_drift(0.0025, 0.001);
}

TEST(SteadyState, HeavyStationaryNoiseDoesNotBlockDetection) {
  const SteadyStateOptions opt;
  const size_t w = opt.window;
  std::vector<size_t> firsts;
  for (uint32_t seed = 1; seed <= 50; ++seed) {
    const std::vector<double> xs = stationary(seed, 200, 0.10);
    const size_t first = first_steady_index(xs, opt);
    EXPECT_LE(first, 12 * w) << "seed " << seed;
    firsts.push_back(first);
  }
  std::sort(firsts.begin(), firsts.end());
  EXPECT_LE(firsts[firsts.size() / 2], 4 * w);  // typically within the first 4 windows
}

TEST(SteadyState, HeavyLognormalNoiseDoesNotBlockDetection) {
  const SteadyStateOptions opt;
  const size_t w = opt.window;
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    Noise noise(seed);
    std::vector<double> xs;
    for (int i = 0; i < 200; ++i) xs.push_back(std::exp(0.2 * noise.gaussian()));
    EXPECT_LE(first_steady_index(xs, opt), 12 * w) << "seed " << seed;
  }
}

TEST(SteadyState, LowNoiseIsSteadyAsSoonAsThreeWindowsExist) {
  for (size_t w : {5u, 10u}) {
    SteadyStateOptions opt;
    opt.window = w;
    for (uint32_t seed = 1; seed <= 20; ++seed) {
      EXPECT_EQ(first_steady_index(stationary(seed, 100, 0.005), opt), 3 * w)
          << "window " << w << ", seed " << seed;
    }
  }
}

TEST(SteadyState, SingleSpikeInTheTailIsTolerated) {
  const SteadyStateOptions opt;
  std::vector<double> xs = stationary(7, 15, 0.005);
  xs[7] = 20.0;  // one iteration hit by a context switch
  EXPECT_TRUE(tail_is_steady(xs, opt));
}

TEST(SteadyState, TooShortSeriesIsNeverSteady) {
  const SteadyStateOptions opt;
  const std::vector<double> xs = stationary(3, 3 * opt.window - 1, 0.0);
  for (size_t n = 0; n <= xs.size(); ++n) EXPECT_FALSE(tail_is_steady(prefix(xs, n), opt));
  EXPECT_EQ(first_steady_index(xs, opt), xs.size() + 1);
  EXPECT_EQ(first_steady_index({}, opt), 1u);
}

TEST(SteadyState, ZeroWindowIsNeverSteady) {
  SteadyStateOptions opt;
  opt.window = 0;
  const std::vector<double> xs(50, 1.0);
  EXPECT_FALSE(tail_is_steady(xs, opt));
  EXPECT_EQ(first_steady_index(xs, opt), xs.size() + 1);
}

TEST(SteadyState, NonFiniteValueInTheTailIsNotSteady) {
  const SteadyStateOptions opt;
  const std::vector<double> clean(30, 1.0);
  ASSERT_TRUE(tail_is_steady(clean, opt));
  for (double bad :
       {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    std::vector<double> xs = clean;
    xs[29 - 3] = bad;
    EXPECT_FALSE(tail_is_steady(xs, opt));
    // Once the bad sample has left the tail it no longer matters.
    xs.insert(xs.end(), 3 * opt.window, 1.0);
    EXPECT_TRUE(tail_is_steady(xs, opt));
  }
}

TEST(SteadyState, ExactlyFlatSeriesIsSteady) {
  const SteadyStateOptions opt;
  EXPECT_EQ(first_steady_index(std::vector<double>(40, 0.004), opt), 3 * opt.window);
}

}  // namespace
}  // namespace plumb::run
