// Unit tests for the ParaDnn sweep analyses (plumb/analysis/sweep_analysis.h): heat maps,
// linear-regression sensitivity, box-plot statistics and speedups, on small hand-built sweeps
// whose answers are worked out by hand in the comments.
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "plumb/analysis/stored_sweep_points.h"
#include "plumb/analysis/sweep_analysis.h"
#include "plumb/core/errors.h"
#include "usage_error_check.h"

namespace plumb::analysis {
namespace {

SweepPoint point(std::map<std::string, double> params, std::map<std::string, double> metrics,
                 std::string group = "paradnn_fc") {
  return SweepPoint{std::move(params), std::move(metrics), std::move(group)};
}

// FC grid: layers {1, 2} x nodes {8, 16} x batch {32, 64}; metric = layers*100 + nodes + batch/32
// so every cell's value is known.
std::vector<SweepPoint> fc_grid() {
  std::vector<SweepPoint> points;
  for (double layers : {1.0, 2.0}) {
    for (double nodes : {8.0, 16.0}) {
      for (double batch : {32.0, 64.0}) {
        points.push_back(point({{"layers", layers}, {"nodes", nodes}, {"batch", batch}},
                               {{"util", layers * 100 + nodes + batch / 32}}));
      }
    }
  }
  return points;
}

// ---------------------------------------------------------------------------------------------
// Heat map

TEST(SweepHeatMap, GridWithOneParameterFixed) {
  const HeatMap map = heat_map(fc_grid(), "batch", "nodes", "util", {{"layers", 2}});
  EXPECT_EQ(map.group, "paradnn_fc");
  EXPECT_EQ(map.xs, (std::vector<double>{32, 64}));
  EXPECT_EQ(map.ys, (std::vector<double>{8, 16}));
  // values[y][x]: 200 + nodes + batch/32.
  EXPECT_DOUBLE_EQ(map.values[0][0], 209);
  EXPECT_DOUBLE_EQ(map.values[0][1], 210);
  EXPECT_DOUBLE_EQ(map.values[1][0], 217);
  EXPECT_DOUBLE_EQ(map.values[1][1], 218);
  EXPECT_EQ(map.counts, (std::vector<std::vector<size_t>>{{1, 1}, {1, 1}}));
  EXPECT_EQ(map.n_points, 4u);
  EXPECT_EQ(map.n_failed, 0u);
  EXPECT_EQ(map.fixed, (std::map<std::string, double>{{"layers", 2}}));
}

TEST(SweepHeatMap, RepeatsAveragedFailuresAndGapsAreNaN) {
  std::vector<SweepPoint> points = {
      point({{"batch", 32}, {"nodes", 8}, {"dtype_bits", 32}}, {{"util", 0.1}}),
      point({{"batch", 32}, {"nodes", 8}, {"dtype_bits", 32}}, {{"util", 0.3}}),  // repeat
      point({{"batch", 64}, {"nodes", 8}, {"dtype_bits", 32}}, {{"util", 0.4}}),
      // Out of memory: no metric; its cell must still be on the axes, and NaN.
      point({{"batch", 64}, {"nodes", 16}, {"dtype_bits", 32}}, {}),
      // NaN metric counts as failed too.
      point({{"batch", 64}, {"nodes", 16}, {"dtype_bits", 32}}, {{"util", std::nan("")}}),
  };
  // dtype_bits never varies, so it needs no fixed value and is reported.
  const HeatMap map = heat_map(points, "batch", "nodes", "util");
  EXPECT_EQ(map.xs, (std::vector<double>{32, 64}));
  EXPECT_EQ(map.ys, (std::vector<double>{8, 16}));
  EXPECT_DOUBLE_EQ(map.values[0][0], 0.2);  // (0.1 + 0.3) / 2
  EXPECT_EQ(map.counts[0][0], 2u);
  EXPECT_DOUBLE_EQ(map.values[0][1], 0.4);
  EXPECT_TRUE(std::isnan(map.values[1][0]));  // never swept
  EXPECT_EQ(map.counts[1][0], 0u);
  EXPECT_TRUE(std::isnan(map.values[1][1]));  // failed
  EXPECT_EQ(map.n_points, 3u);
  EXPECT_EQ(map.n_failed, 2u);
  EXPECT_EQ(map.fixed, (std::map<std::string, double>{{"dtype_bits", 32}}));
}

TEST(SweepHeatMap, AxesOnlyFromPointsMatchingTheFixedValues) {
  std::vector<SweepPoint> points = fc_grid();
  points.push_back(point({{"layers", 1}, {"nodes", 32}, {"batch", 128}}, {{"util", 1}}));
  const HeatMap map = heat_map(points, "batch", "nodes", "util", {{"layers", 2}});
  EXPECT_EQ(map.xs, (std::vector<double>{32, 64}));
  EXPECT_EQ(map.ys, (std::vector<double>{8, 16}));
}

TEST(SweepHeatMap, UnfixedVaryingParameterIsNamedWithItsValues) {
  expect_usage_error([] { heat_map(fc_grid(), "batch", "nodes", "util"); },
                     {"layers (1, 2)", "fixed value"});
}

TEST(SweepHeatMap, ParameterMissingFromSomePointsCountsAsVarying) {
  std::vector<SweepPoint> points = fc_grid();
  for (SweepPoint& p : points) p.params.erase("layers");
  points.push_back(point({{"nodes", 8}, {"batch", 32}, {"dropout", 0.5}}, {{"util", 1}}));
  expect_usage_error([&] { heat_map(points, "batch", "nodes", "util"); }, {"dropout (0.5)"});
}

TEST(SweepHeatMap, BadFixedValues) {
  expect_usage_error(
      [] {
        heat_map(fc_grid(), "batch", "nodes", "util", {{"layers", 3}});
      },
      {"layers=3", "values swept: 1, 2"});
  expect_usage_error(
      [] {
        heat_map(fc_grid(), "batch", "nodes", "util", {{"layers", 1}, {"depth", 1}});
      },
      {"'depth'", "batch, layers, nodes"});
  expect_usage_error(
      [] {
        heat_map(fc_grid(), "batch", "nodes", "util", {{"layers", 1}, {"batch", 32}});
      },
      {"'batch' is an axis"});
}

TEST(SweepHeatMap, FixedValuesThatNeverOccurTogether) {
  // layers=1 only with nodes=8, layers=2 only with nodes=16.
  const std::vector<SweepPoint> points = {
      point({{"layers", 1}, {"nodes", 8}, {"batch", 32}, {"input", 4}}, {{"util", 1}}),
      point({{"layers", 2}, {"nodes", 16}, {"batch", 32}, {"input", 8}}, {{"util", 2}}),
  };
  expect_usage_error(
      [&] {
        heat_map(points, "batch", "nodes", "util", {{"layers", 1}, {"input", 8}});
      },
      {"input=8, layers=1", "together"});
}

TEST(SweepHeatMap, BadAxesMetricAndGroups) {
  expect_usage_error(
      [] {
        heat_map(fc_grid(), "batch", "batch", "util", {{"layers", 1}});
      },
      {"both 'batch'"});
  expect_usage_error(
      [] {
        heat_map(fc_grid(), "width", "nodes", "util", {{"layers", 1}});
      },
      {"'width'", "batch, layers, nodes"});
  expect_usage_error(
      [] {
        heat_map(fc_grid(), "batch", "nodes", "flops", {{"layers", 1}});
      },
      {"'flops'", "util"});
  std::vector<SweepPoint> mixed = fc_grid();
  mixed.push_back(
      point({{"layers", 1}, {"nodes", 8}, {"batch", 32}}, {{"util", 1}}, "paradnn_cnn"));
  expect_usage_error(
      [&] {
        heat_map(mixed, "batch", "nodes", "util", {{"layers", 1}});
      },
      {"paradnn_cnn, paradnn_fc"});
  expect_usage_error([] { heat_map({}, "batch", "nodes", "util"); }, {"no sweep points"});
}

TEST(SweepHeatMap, UnfixedParametersGiveOneMapPerValueAndGroup) {
  // fc_grid varies layers too: without --fix, one map per layers value, ascending.
  const auto maps = heat_maps(fc_grid(), "nodes", "batch", "util");
  ASSERT_EQ(maps.size(), 2u);
  EXPECT_EQ(maps[0].fixed, (std::map<std::string, double>{{"layers", 1}}));
  EXPECT_EQ(maps[1].fixed, (std::map<std::string, double>{{"layers", 2}}));
  EXPECT_DOUBLE_EQ(maps[1].values[1][0], 200 + 8 + 2);  // batch 64, nodes 8
  // Everything fixed: exactly heat_map().
  const auto one = heat_maps(fc_grid(), "nodes", "batch", "util", {{"layers", 1}});
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].values, heat_map(fc_grid(), "nodes", "batch", "util", {{"layers", 1}}).values);
  // Two model types: a map each, in the order they appear.
  std::vector<SweepPoint> mixed = fc_grid();
  mixed.push_back(point({{"layers", 1}, {"nodes", 8}, {"batch", 32}}, {{"util", 1}}, "other"));
  const auto per_group = heat_maps(mixed, "nodes", "batch", "util", {{"layers", 1}});
  ASSERT_EQ(per_group.size(), 2u);
  EXPECT_EQ(per_group[1].group, "other");
  expect_usage_error([] { heat_maps(fc_grid(), "nodes", "batch", "flops"); }, {"'flops'"});
}

TEST(SweepHeatMap, NonNumericParametersSelectOneGroup) {
  // A CNN sweep over both block types: one heat map per block type.
  std::vector<SweepPoint> points;
  for (const std::string block : {"residual", "bottleneck"})
    for (double filters : {16.0, 32.0})
      for (double batch : {4.0, 8.0})
        points.push_back(point({{"filters", filters}, {"batch", batch}},
                               {{"util", filters + batch + (block == "residual" ? 0.5 : 0)}},
                               "paradnn_cnn block=" + block));
  const auto residual = with_text_params(points, {{"block", "residual"}});
  ASSERT_EQ(residual.size(), 4u);
  const HeatMap h = heat_map(residual, "filters", "batch", "util");
  EXPECT_EQ(h.group, "paradnn_cnn block=residual");
  EXPECT_DOUBLE_EQ(h.values[1][0], 16 + 8 + 0.5);
  EXPECT_EQ(with_text_params(points, {}).size(), 8u);
  expect_usage_error(
      [&] {
        with_text_params(points, {{"block", "plain"}});
      },
      {"block=plain", "bottleneck, residual"});
  expect_usage_error(
      [&] {
        with_text_params(points, {{"cell", "lstm"}});
      },
      {"'cell'", "(block)", "--fix KEY=NUMBER"});
}

// ---------------------------------------------------------------------------------------------
// Sensitivity

TEST(SweepSensitivity, ExactLinearModelInLog2Inputs) {
  // a in {1, 2, 4, 8} (log2 0..3), b in {16, 64} (log2 4, 6); metric = 10 + 3 log2 a - 0.5 log2 b.
  // Population stddev of log2 a over the grid = sqrt(1.25), of log2 b = 1, so the weights of
  // the standardized inputs are 3 sqrt(1.25) and -0.5; intercept = mean = 10 + 4.5 - 2.5 = 12.
  std::vector<SweepPoint> points;
  for (double a : {1.0, 2.0, 4.0, 8.0}) {
    for (double b : {16.0, 64.0}) {
      points.push_back(
          point({{"a", a}, {"b", b}}, {{"m", 10 + 3 * std::log2(a) - 0.5 * std::log2(b)}}));
    }
  }
  const Sensitivity s = sensitivity(points, {}, "m", /*log_inputs=*/true);
  ASSERT_EQ(s.weights.size(), 2u);
  EXPECT_EQ(s.weights[0].key, "a");  // sorted by |weight|
  EXPECT_NEAR(s.weights[0].weight, 3 * std::sqrt(1.25), 1e-9);
  EXPECT_NEAR(s.weights[0].input_mean, 1.5, 1e-12);
  EXPECT_NEAR(s.weights[0].input_stddev, std::sqrt(1.25), 1e-12);
  EXPECT_EQ(s.weights[1].key, "b");
  EXPECT_NEAR(s.weights[1].weight, -0.5, 1e-9);
  EXPECT_NEAR(s.intercept, 12, 1e-9);
  EXPECT_NEAR(s.r_squared, 1, 1e-12);
  EXPECT_EQ(s.n, 8u);
  EXPECT_EQ(s.n_failed, 0u);
  EXPECT_NEAR(s.metric_mean, 12, 1e-12);
  EXPECT_TRUE(s.log_inputs);
}

TEST(SweepSensitivity, NoisyOneKeyFitMatchesHandComputation) {
  // x = 1, 2, 3, 4; y = 1, 3, 2, 4. Slope = Sxy / Sxx = 4 / 5 = 0.8 per unit of x; the
  // population stddev of x is sqrt(1.25), so weight = 0.8 sqrt(1.25). R^2 = Sxy^2 / (Sxx Syy)
  // = 16 / 25 = 0.64. Intercept = mean y = 2.5.
  const std::vector<SweepPoint> points = {
      point({{"x", 1}}, {{"y", 1}}),
      point({{"x", 2}}, {{"y", 3}}),
      point({{"x", 3}}, {{"y", 2}}),
      point({{"x", 4}}, {{"y", 4}}),
      point({{"x", 5}}, {{"y", std::nan("")}}),  // failed run: left out of the fit
  };
  const Sensitivity s = sensitivity(points, {"x"}, "y", /*log_inputs=*/false);
  ASSERT_EQ(s.weights.size(), 1u);
  EXPECT_NEAR(s.weights[0].weight, 0.8 * std::sqrt(1.25), 1e-12);
  EXPECT_NEAR(s.intercept, 2.5, 1e-12);
  EXPECT_NEAR(s.r_squared, 0.64, 1e-12);
  EXPECT_EQ(s.n, 4u);
  EXPECT_EQ(s.n_failed, 1u);
  EXPECT_NEAR(s.metric_stddev, std::sqrt(1.25), 1e-12);
}

TEST(SweepSensitivity, NegativeWeightSortsByMagnitudeAndKeysSelectInputs) {
  // y = -4 x + z over a 2x2 grid of x, z in {0, 1}: standardized stddev 0.5 each, so weights
  // are -2 (x) and 0.5 (z); x comes first despite its sign.
  std::vector<SweepPoint> points;
  for (double x : {0.0, 1.0}) {
    for (double z : {0.0, 1.0}) points.push_back(point({{"x", x}, {"z", z}}, {{"y", -4 * x + z}}));
  }
  const Sensitivity s = sensitivity(points, {}, "y", false);
  EXPECT_EQ(s.weights[0].key, "x");
  EXPECT_NEAR(s.weights[0].weight, -2, 1e-12);
  EXPECT_NEAR(s.weights[1].weight, 0.5, 1e-12);
  // Only z as input: x's effect is unexplained variance. Var(y) = 4.25, explained 0.25.
  const Sensitivity only_z = sensitivity(points, {"z"}, "y", false);
  ASSERT_EQ(only_z.weights.size(), 1u);
  EXPECT_NEAR(only_z.weights[0].weight, 0.5, 1e-12);
  EXPECT_NEAR(only_z.r_squared, 0.25 / 4.25, 1e-12);
}

TEST(SweepSensitivity, ConstantMetricHasZeroWeightsAndUndefinedRSquared) {
  const std::vector<SweepPoint> points = {point({{"x", 1}}, {{"y", 0.1}}),
                                          point({{"x", 2}}, {{"y", 0.1}}),
                                          point({{"x", 3}}, {{"y", 0.1}})};
  const Sensitivity s = sensitivity(points, {}, "y", false);
  EXPECT_NEAR(s.weights[0].weight, 0, 1e-12);
  EXPECT_NEAR(s.intercept, 0.1, 1e-12);
  EXPECT_TRUE(std::isnan(s.r_squared));
  EXPECT_EQ(s.metric_stddev, 0);
}

TEST(SweepSensitivity, ExactlyKeysPlusOnePointsIsAnExactFit) {
  const std::vector<SweepPoint> points = {point({{"x", 1}}, {{"y", 5}}),
                                          point({{"x", 3}}, {{"y", 1}})};
  const Sensitivity s = sensitivity(points, {}, "y", false);
  EXPECT_NEAR(s.weights[0].weight, -2, 1e-12);  // stddev of {1, 3} is 1; slope -2
  EXPECT_NEAR(s.r_squared, 1, 1e-12);
}

TEST(SweepSensitivity, Errors) {
  const std::vector<SweepPoint> grid = fc_grid();
  expect_usage_error([&] { sensitivity(grid, {}, "flops", true); }, {"'flops'", "util"});
  expect_usage_error([&] { sensitivity(grid, {"width"}, "util", true); },
                     {"'width'", "batch, layers, nodes"});
  expect_usage_error([&] { sensitivity(grid, {"batch", "batch"}, "util", true); }, {"twice"});
  expect_usage_error([] { sensitivity({}, {}, "util", true); }, {"no sweep points"});

  // Fewer points than keys + 1.
  const std::vector<SweepPoint> two = {point({{"a", 1}, {"b", 2}}, {{"y", 1}}),
                                       point({{"a", 2}, {"b", 1}}, {{"y", 2}})};
  expect_usage_error([&] { sensitivity(two, {}, "y", false); }, {"at least 3", "got 2"});

  // A constant key cannot be standardized.
  std::vector<SweepPoint> constant = fc_grid();
  for (SweepPoint& p : constant) p.params["input"] = 784;
  expect_usage_error(
      [&] {
        sensitivity(constant, {"batch", "input"}, "util", true);
      },
      {"'input' is constant (784)"});
  // ... and with keys empty it is simply not an input.
  EXPECT_EQ(sensitivity(constant, {}, "util", true).weights.size(), 3u);

  // Non-positive value with log inputs.
  std::vector<SweepPoint> zero = fc_grid();
  zero[0].params["layers"] = 0;
  expect_usage_error([&] { sensitivity(zero, {}, "util", true); }, {"'layers'", "value 0"});

  // Keys moving in lockstep (nodes = 2 * input): the later one is named.
  std::vector<SweepPoint> lockstep = fc_grid();
  for (SweepPoint& p : lockstep) p.params["input"] = p.params["nodes"] / 2;
  expect_usage_error([&] { sensitivity(lockstep, {}, "util", true); }, {"'nodes'", "lockstep"});

  // Nothing varies.
  const std::vector<SweepPoint> flat = {point({{"a", 1}}, {{"y", 1}}),
                                        point({{"a", 1}}, {{"y", 2}})};
  expect_usage_error([&] { sensitivity(flat, {}, "y", false); }, {"no parameter varies"});

  // Every metric failed.
  const std::vector<SweepPoint> failed = {point({{"a", 1}}, {{"y", std::nan("")}})};
  expect_usage_error([&] { sensitivity(failed, {}, "y", false); }, {"no point has a finite"});

  // A key that some points lack (two model types mixed).
  std::vector<SweepPoint> mixed = fc_grid();
  mixed.push_back(point({{"layers", 1}, {"filters", 8}, {"batch", 32}}, {{"util", 1}}, "cnn"));
  expect_usage_error([&] { sensitivity(mixed, {"nodes"}, "util", true); },
                     {"'nodes' is missing from 1 of 9", "one group"});
}

// ---------------------------------------------------------------------------------------------
// Box plots

TEST(SweepBoxPlots, PercentilesInterpolateBetweenOrderStatistics) {
  // Group "fc": 10, 20, 30, 40, 50 given out of order. Rank q (n - 1) = 4q:
  // p2 -> 0.08 -> 10.8; p9 -> 0.36 -> 13.6; p50 -> 2 -> 30; p91 -> 3.64 -> 46.4;
  // p98 -> 3.92 -> 49.2. Outliers: 10 < 10.8 and 50 > 49.2.
  // Group "rnn": 0..100 -> every percentile equals its q; no outliers strictly beyond.
  // Group "cnn": one value and one failed point.
  std::vector<SweepPoint> points;
  for (double v : {30.0, 10.0, 50.0, 20.0, 40.0}) points.push_back(point({}, {{"s", v}}, "fc"));
  points.push_back(point({}, {{"s", 7}}, "cnn"));
  points.push_back(point({}, {}, "cnn"));
  for (int v = 100; v >= 0; --v) points.push_back(point({}, {{"s", double(v)}}, "rnn"));
  points.push_back(point({}, {{"other", 1}}, "empty"));

  const std::vector<BoxStats> boxes = box_plots(points, "s");
  ASSERT_EQ(boxes.size(), 4u);
  EXPECT_EQ(boxes[0].group, "fc");  // first-appearance order
  EXPECT_EQ(boxes[1].group, "cnn");
  EXPECT_EQ(boxes[2].group, "rnn");
  EXPECT_EQ(boxes[3].group, "empty");

  const BoxStats& fc = boxes[0];
  EXPECT_EQ(fc.n, 5u);
  EXPECT_DOUBLE_EQ(fc.min, 10);
  EXPECT_DOUBLE_EQ(fc.max, 50);
  EXPECT_DOUBLE_EQ(fc.mean, 30);
  EXPECT_NEAR(fc.p2, 10.8, 1e-12);
  EXPECT_NEAR(fc.p9, 13.6, 1e-12);
  EXPECT_NEAR(fc.p50, 30, 1e-12);
  EXPECT_NEAR(fc.p91, 46.4, 1e-12);
  EXPECT_NEAR(fc.p98, 49.2, 1e-12);
  EXPECT_EQ(fc.outliers, (std::vector<double>{10, 50}));

  const BoxStats& cnn = boxes[1];
  EXPECT_EQ(cnn.n, 1u);
  EXPECT_EQ(cnn.n_failed, 1u);
  EXPECT_DOUBLE_EQ(cnn.p2, 7);
  EXPECT_DOUBLE_EQ(cnn.p98, 7);
  EXPECT_TRUE(cnn.outliers.empty());

  const BoxStats& rnn = boxes[2];
  EXPECT_NEAR(rnn.p2, 2, 1e-12);
  EXPECT_NEAR(rnn.p9, 9, 1e-12);
  EXPECT_NEAR(rnn.p50, 50, 1e-12);
  EXPECT_NEAR(rnn.p91, 91, 1e-12);
  EXPECT_NEAR(rnn.p98, 98, 1e-12);
  EXPECT_EQ(rnn.outliers, (std::vector<double>{0, 1, 99, 100}));

  const BoxStats& empty = boxes[3];
  EXPECT_EQ(empty.n, 0u);
  EXPECT_EQ(empty.n_failed, 1u);
  EXPECT_TRUE(std::isnan(empty.p50));
  EXPECT_TRUE(std::isnan(empty.mean));
}

TEST(SweepBoxPlots, Errors) {
  expect_usage_error([] { box_plots({}, "s"); }, {"no sweep points"});
  expect_usage_error([] { box_plots(fc_grid(), "s"); }, {"'s'", "util"});
}

// ---------------------------------------------------------------------------------------------
// Speedup

TEST(SweepSpeedup, RatiosGeomeanUnmatchedAndRepeats) {
  const std::vector<SweepPoint> a = {
      point({{"batch", 32}}, {{"ex_s", 100}}),
      point({{"batch", 64}}, {{"ex_s", 50}}),
      point({{"batch", 64}}, {{"ex_s", 150}}),  // repeat: A at batch 64 = 100
      point({{"batch", 128}}, {{"ex_s", 10}}),  // B has no batch 128
      point({{"batch", 256}}, {}),              // failed in A
  };
  const std::vector<SweepPoint> b = {
      point({{"batch", 64}}, {{"ex_s", 800}}), point({{"batch", 32}}, {{"ex_s", 200}}),
      point({{"batch", 512}}, {{"ex_s", 1}}),  // A has no batch 512
      point({{"batch", 256}}, {{"ex_s", 0}}),  // 0 cannot form a ratio
  };
  const Speedup s = speedup(a, b, "ex_s", {}, /*log_inputs=*/true);
  ASSERT_EQ(s.points.size(), 2u);
  EXPECT_EQ(s.points[0].params, (std::map<std::string, double>{{"batch", 32}}));  // A's order
  EXPECT_DOUBLE_EQ(s.points[0].ratio, 2);
  EXPECT_DOUBLE_EQ(s.points[1].a, 100);
  EXPECT_EQ(s.points[1].a_count, 2u);
  EXPECT_EQ(s.points[1].b_count, 1u);
  EXPECT_DOUBLE_EQ(s.points[1].ratio, 8);
  EXPECT_NEAR(s.geomean, 4, 1e-12);  // sqrt(2 * 8)
  EXPECT_EQ(s.unmatched_a, 1u);
  EXPECT_EQ(s.unmatched_b, 1u);
  EXPECT_EQ(s.failed_a, 1u);
  EXPECT_EQ(s.failed_b, 1u);
  ASSERT_EQ(s.notes.size(), 3u);  // A failed, A averaged, B failed
  EXPECT_NE(s.notes[1].find("averaged"), std::string::npos);
  // Two matched points, one varying key: exact fit. log2 batch = 5, 6 (stddev 0.5);
  // ratio 2 -> 8, so weight = +3 per stddev, intercept 5.
  ASSERT_TRUE(s.sensitivity.has_value());
  EXPECT_EQ(s.sensitivity->metric, "speedup");
  EXPECT_NEAR(s.sensitivity->weights[0].weight, 3, 1e-12);
  EXPECT_NEAR(s.sensitivity->intercept, 5, 1e-12);
}

TEST(SweepSpeedup, MatchKeysGroupAndAveragingOverOtherParameters) {
  // Matching on batch only: A's two layer settings at batch 32 are averaged.
  const std::vector<SweepPoint> a = {
      point({{"batch", 32}, {"layers", 1}}, {{"t", 1}}),
      point({{"batch", 32}, {"layers", 2}}, {{"t", 3}}),
      point({{"batch", 32}, {"layers", 1}}, {{"t", 5}}, "cnn"),  // other group: no partner
  };
  const std::vector<SweepPoint> b = {point({{"batch", 32}, {"layers", 4}}, {{"t", 4}})};
  const Speedup s = speedup(a, b, "t", {"batch"}, true);
  ASSERT_EQ(s.points.size(), 1u);
  EXPECT_EQ(s.points[0].group, "paradnn_fc");
  EXPECT_DOUBLE_EQ(s.points[0].a, 2);
  EXPECT_DOUBLE_EQ(s.points[0].ratio, 2);
  EXPECT_EQ(s.unmatched_a, 1u);
  EXPECT_EQ(s.unmatched_b, 0u);
  // One matched point: no sensitivity, and a note says why.
  EXPECT_FALSE(s.sensitivity.has_value());
  ASSERT_FALSE(s.notes.empty());
  EXPECT_NE(s.notes.back().find("sensitivity not fitted"), std::string::npos);

  // With every parameter as the key, layers 1/2 vs 4 never match.
  const Speedup none = speedup(a, b, "t");
  EXPECT_TRUE(none.points.empty());
  EXPECT_TRUE(std::isnan(none.geomean));
  EXPECT_EQ(none.unmatched_a, 3u);
  EXPECT_EQ(none.unmatched_b, 1u);
  EXPECT_NE(none.notes.front().find("no setting of A matches"), std::string::npos);
}

TEST(SweepSpeedup, Errors) {
  const std::vector<SweepPoint> a = {point({{"batch", 32}}, {{"t", 1}})};
  expect_usage_error([&] { speedup({}, a, "t"); }, {"side A"});
  expect_usage_error([&] { speedup(a, {}, "t"); }, {"side B"});
  expect_usage_error([&] { speedup(a, a, "x"); }, {"'x'", "side A", "t"});
  expect_usage_error([&] { speedup(a, a, "t", {"nodes"}); }, {"'nodes'", "batch"});
}

}  // namespace
}  // namespace plumb::analysis
