// Unit tests for the Fathom-style breakdowns (plumb/analysis/breakdown.h) on small
// hand-built profiles whose answers are computed by hand: grouping, shares and rates,
// the cumulative curve, training vs inference, and Amdahl thread-scaling fits.
#include "plumb/analysis/breakdown.h"

#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "plumb/core/errors.h"
#include "usage_error_check.h"

namespace plumb::analysis {
namespace {

using profile::OpStat;
using profile::StepProfile;

OpStat op(const std::string& name, const std::string& scope, const std::string& layer,
          const std::string& category, const std::string& kind, double calls, double self_s,
          double flops = 0, double bytes_read = 0, double bytes_written = 0) {
  // OpStat's fields in order; inclusive time equals self time here.
  return {name,   scope,  layer, category, kind,       "",           calls,
          self_s, self_s, flops, 0,        bytes_read, bytes_written};
}

// 10 s step, 9.5 s in operators: forward and backward convolution, a matmul, two uncosted
// leaves (one without a layer) and an autograd composite.
StepProfile sample_profile() {
  StepProfile p;
  p.steps = 1;
  p.step_s = 10;
  p.ops = {
      op("aten::conv", "forward", "conv1", "Conv", profile::kCosted, 2, 4.0, 8e9, 1e9, 1e9),
      op("aten::conv", "backward", "conv1", "Conv", profile::kCosted, 2, 2.0, 4e9, 0.5e9, 0.5e9),
      op("aten::addmm", "forward", "fc", "MatMul", profile::kCosted, 1, 1.5, 3e9, 0.25e9, 0.25e9),
      op("aten::weird", "forward", "", "Other", profile::kUncosted, 3, 1.0),
      op("aten::weird2", "backward", "fc", "Elementwise", profile::kUncosted, 1, 0.5),
      op("ConvolutionBackward0", "backward", "conv1", "Conv", profile::kComposite, 2, 0.5),
  };
  return p;
}

std::vector<std::string> row_names(const Breakdown& b) {
  std::vector<std::string> names;
  for (const BreakdownRow& row : b.rows) names.push_back(row.name);
  return names;
}

const BreakdownRow& row_named(const Breakdown& b, const std::string& name) {
  for (const BreakdownRow& row : b.rows) {
    if (row.name == name) return row;
  }
  ADD_FAILURE() << "no row " << name;
  static const BreakdownRow kMissing;
  return kMissing;
}

// A row's time, calls, FLOPs and bytes per step.
void expect_row(const BreakdownRow& row, double time_s, double calls, double flops, double bytes) {
  EXPECT_DOUBLE_EQ(row.time_s, time_s) << row.name;
  EXPECT_DOUBLE_EQ(row.calls, calls) << row.name;
  EXPECT_DOUBLE_EQ(row.flops, flops) << row.name;
  EXPECT_DOUBLE_EQ(row.bytes, bytes) << row.name;
}

void expect_shares_and_overhead_sum_to_one(const Breakdown& b) {
  double sum = b.overhead_s / b.step_s;
  for (const BreakdownRow& row : b.rows) sum += row.time_share;
  EXPECT_NEAR(sum, 1.0, 1e-12);
}

TEST(ParseGroupBy, AcceptsTheThreeViews) {
  EXPECT_EQ(parse_group_by("op"), GroupBy::kOp);
  EXPECT_EQ(parse_group_by("category"), GroupBy::kCategory);
  EXPECT_EQ(parse_group_by("layer"), GroupBy::kLayer);
}

TEST(ParseGroupBy, RejectsOthersNamingTheValidValues) {
  for (const std::string bad : {"", "Op", "ops", "scope"}) {
    expect_usage_error([&] { parse_group_by(bad); }, {"'" + bad + "'", "op, category, layer"});
  }
}

TEST(Breakdown, OpViewKeepsBackwardRowsApart) {
  const Breakdown b = breakdown(sample_profile(), GroupBy::kOp);
  // Ties (0.5 s) are broken by name; uppercase sorts first.
  EXPECT_EQ(row_names(b), (std::vector<std::string>{
                              "aten::conv", "aten::conv (backward)", "aten::addmm", "aten::weird",
                              "ConvolutionBackward0 (backward)", "aten::weird2 (backward)"}));
  expect_row(row_named(b, "aten::conv"), 4.0, 2, 8e9, 2e9);
  expect_row(row_named(b, "aten::conv (backward)"), 2.0, 2, 4e9, 1e9);
  EXPECT_DOUBLE_EQ(row_named(b, "aten::weird").uncosted_time_s, 1.0);
  EXPECT_DOUBLE_EQ(row_named(b, "aten::conv").uncosted_time_s, 0.0);
}

TEST(Breakdown, TotalsOverheadAndUncostedList) {
  const Breakdown b = breakdown(sample_profile(), GroupBy::kOp);
  EXPECT_DOUBLE_EQ(b.step_s, 10.0);
  EXPECT_DOUBLE_EQ(b.op_time_s, 9.5);
  EXPECT_DOUBLE_EQ(b.overhead_s, 0.5);
  EXPECT_DOUBLE_EQ(b.uncosted_time_s, 1.5);
  EXPECT_DOUBLE_EQ(b.uncosted_share, 0.15);
  EXPECT_EQ(b.uncosted_ops, (std::vector<std::string>{"aten::weird", "aten::weird2"}));
  EXPECT_DOUBLE_EQ(row_named(b, "aten::conv").time_share, 0.4);
  expect_shares_and_overhead_sum_to_one(b);
}

TEST(Breakdown, CategoryViewPutsUncostedLeavesInTheirOwnRow) {
  const Breakdown b = breakdown(sample_profile(), GroupBy::kCategory);
  // "Other" and "Elementwise" held only uncosted leaves, so they have no rows of their own.
  EXPECT_EQ(row_names(b), (std::vector<std::string>{"Conv", "MatMul", "uncosted"}));
  // Conv: forward + backward + composite self time.
  expect_row(row_named(b, "Conv"), 6.5, 6, 12e9, 3e9);
  EXPECT_DOUBLE_EQ(row_named(b, "Conv").time_share, 0.65);
  expect_row(row_named(b, "uncosted"), 1.5, 4, 0, 0);
  EXPECT_DOUBLE_EQ(row_named(b, "uncosted").uncosted_time_s, 1.5);
  EXPECT_DOUBLE_EQ(b.op_time_s, 9.5);
  expect_shares_and_overhead_sum_to_one(b);
}

TEST(Breakdown, LayerViewNamesOpsWithoutALayer) {
  const Breakdown b = breakdown(sample_profile(), GroupBy::kLayer);
  EXPECT_EQ(row_names(b), (std::vector<std::string>{"conv1", "fc", "(no layer)"}));
  EXPECT_DOUBLE_EQ(row_named(b, "conv1").time_s, 6.5);
  EXPECT_DOUBLE_EQ(row_named(b, "fc").time_s, 2.0);
  EXPECT_DOUBLE_EQ(row_named(b, "fc").uncosted_time_s, 0.5);
  EXPECT_DOUBLE_EQ(row_named(b, "(no layer)").time_s, 1.0);
  EXPECT_DOUBLE_EQ(row_named(b, "(no layer)").time_share, 0.1);
  expect_shares_and_overhead_sum_to_one(b);
}

TEST(Breakdown, RatesAndIntensity) {
  const Breakdown b = breakdown(sample_profile(), GroupBy::kOp);
  const BreakdownRow& mm = row_named(b, "aten::addmm");  // 3 GFLOP, 0.5 GB in 1.5 s
  EXPECT_DOUBLE_EQ(mm.gflops_per_s, 2.0);
  EXPECT_DOUBLE_EQ(mm.gbytes_per_s, 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(mm.intensity, 6.0);
  const BreakdownRow& unc = row_named(b, "aten::weird");  // no work known: all rates 0
  EXPECT_DOUBLE_EQ(unc.gflops_per_s, 0.0);
  EXPECT_DOUBLE_EQ(unc.gbytes_per_s, 0.0);
  EXPECT_DOUBLE_EQ(unc.intensity, 0.0);
}

TEST(Breakdown, ZeroTimeAndZeroStepGiveZeroRatesNotInfinities) {
  StepProfile p;  // step_s = 0
  p.ops = {op("aten::tiny", "forward", "", "Elementwise", profile::kCosted, 1, 0.0, 100, 8, 4)};
  const Breakdown b = breakdown(p, GroupBy::kOp);
  ASSERT_EQ(b.rows.size(), 1u);
  EXPECT_DOUBLE_EQ(b.rows[0].time_share, 0.0);
  EXPECT_DOUBLE_EQ(b.rows[0].gflops_per_s, 0.0);
  EXPECT_DOUBLE_EQ(b.rows[0].gbytes_per_s, 0.0);
  EXPECT_DOUBLE_EQ(b.rows[0].intensity, 100.0 / 12.0);
  EXPECT_DOUBLE_EQ(b.uncosted_share, 0.0);

  const Breakdown empty = breakdown(StepProfile{}, GroupBy::kCategory);
  EXPECT_TRUE(empty.rows.empty());
  EXPECT_TRUE(empty.uncosted_ops.empty());
  EXPECT_DOUBLE_EQ(empty.op_time_s, 0.0);
  EXPECT_DOUBLE_EQ(empty.overhead_s, 0.0);
}

TEST(CumulativeCurve, MergesScopesSortsAndCounts90) {
  StepProfile p;
  p.step_s = 12;
  p.ops = {
      op("c", "forward", "", "Other", profile::kCosted, 1, 1.5),
      op("a", "forward", "", "Conv", profile::kCosted, 1, 3.0),
      op("d", "forward", "", "Other", profile::kUncosted, 1, 0.5),
      op("b", "forward", "", "MatMul", profile::kCosted, 1, 3.0),
      op("a", "backward", "", "Conv", profile::kComposite, 1, 2.0),
  };
  const CumulativeCurve c = cumulative_curve(p);
  EXPECT_EQ(c.names, (std::vector<std::string>{"a", "b", "c", "d"}));
  const std::vector<double> share = {0.5, 0.3, 0.15, 0.05};
  const std::vector<double> cumulative = {0.5, 0.8, 0.95, 1.0};
  ASSERT_EQ(c.share.size(), 4u);
  ASSERT_EQ(c.cumulative.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_NEAR(c.share[i], share[i], 1e-12);
    EXPECT_NEAR(c.cumulative[i], cumulative[i], 1e-12);
  }
  EXPECT_DOUBLE_EQ(c.cumulative.back(), 1.0);
  EXPECT_EQ(c.count_for_90, 3u);
}

TEST(CumulativeCurve, ExactlyNinetyPercentCountsDespiteRounding) {
  StepProfile p;
  // 6 ms + 3 ms of 10 ms is 0.8999999999999999 in binary floating point.
  p.ops = {op("x", "forward", "", "Other", profile::kCosted, 1, 0.006),
           op("y", "forward", "", "Other", profile::kCosted, 1, 0.003),
           op("z", "forward", "", "Other", profile::kCosted, 1, 0.001)};
  EXPECT_EQ(cumulative_curve(p).count_for_90, 2u);

  StepProfile single;
  single.ops = {op("only", "forward", "", "Other", profile::kCosted, 1, 2.0)};
  EXPECT_EQ(cumulative_curve(single).count_for_90, 1u);
}

TEST(CumulativeCurve, EmptyProfileIsEmpty) {
  const CumulativeCurve c = cumulative_curve(StepProfile{});
  EXPECT_TRUE(c.names.empty());
  EXPECT_TRUE(c.share.empty());
  EXPECT_TRUE(c.cumulative.empty());
  EXPECT_EQ(c.count_for_90, 0u);
}

TEST(CompareModes, StepRatioAndCategoryShares) {
  StepProfile train;
  train.step_s = 3;
  train.ops = {op("aten::conv", "forward", "", "Conv", profile::kCosted, 1, 1.0),
               op("aten::conv", "backward", "", "Conv", profile::kCosted, 1, 1.0),
               op("aten::weird", "backward", "", "Other", profile::kUncosted, 1, 1.0)};
  StepProfile infer;
  infer.step_s = 1.5;
  infer.ops = {op("aten::conv", "forward", "", "Conv", profile::kCosted, 1, 0.75),
               op("aten::addmm", "forward", "", "MatMul", profile::kCosted, 1, 0.25)};
  const ModeComparison m = compare_modes(train, infer);
  EXPECT_DOUBLE_EQ(m.train_step_s, 3.0);
  EXPECT_DOUBLE_EQ(m.infer_step_s, 1.5);
  EXPECT_DOUBLE_EQ(m.step_ratio, 2.0);
  ASSERT_EQ(m.category_share.size(), 3u);  // uncosted time stays in its category ("Other")
  EXPECT_DOUBLE_EQ(m.category_share.at("Conv").first, 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(m.category_share.at("Conv").second, 0.75);
  EXPECT_DOUBLE_EQ(m.category_share.at("MatMul").first, 0.0);
  EXPECT_DOUBLE_EQ(m.category_share.at("MatMul").second, 0.25);
  EXPECT_DOUBLE_EQ(m.category_share.at("Other").first, 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(m.category_share.at("Other").second, 0.0);
}

TEST(CompareModes, ZeroInferenceStepGivesNaNRatio) {
  StepProfile train;
  train.step_s = 1;
  EXPECT_TRUE(std::isnan(compare_modes(train, StepProfile{}).step_ratio));
}

// t(p) = t1 * (f + (1 - f) * p1 / p), exactly.
std::vector<double> amdahl_times(double t1, double f, const std::vector<int>& threads) {
  std::vector<double> times;
  for (int p : threads) times.push_back(t1 * (f + (1 - f) * threads.front() / p));
  return times;
}

TEST(FitAmdahl, RecoversSerialFractionFromExactData) {
  const ScalingFit fit = fit_amdahl("Conv", {1, 2, 4}, amdahl_times(8.0, 0.2, {1, 2, 4}));
  EXPECT_EQ(fit.name, "Conv");
  EXPECT_NEAR(fit.serial_fraction, 0.2, 1e-9);
  EXPECT_NEAR(fit.r_squared, 1.0, 1e-9);
  ASSERT_EQ(fit.speedup.size(), 3u);
  EXPECT_DOUBLE_EQ(fit.speedup[0], 1.0);
  EXPECT_NEAR(fit.speedup[1], 8.0 / 4.8, 1e-12);
  EXPECT_NEAR(fit.speedup[2], 2.5, 1e-12);
}

TEST(FitAmdahl, SortsByThreadsAndUsesSmallestCountAsBaseline) {
  // Baseline at 2 threads, given out of order: t(2) = 10, f = 0.5.
  const ScalingFit fit = fit_amdahl("MatMul", {8, 2, 4}, {6.25, 10.0, 7.5});
  EXPECT_EQ(fit.threads, (std::vector<int>{2, 4, 8}));
  EXPECT_EQ(fit.time_s, (std::vector<double>{10.0, 7.5, 6.25}));
  EXPECT_NEAR(fit.serial_fraction, 0.5, 1e-9);
  EXPECT_NEAR(fit.r_squared, 1.0, 1e-9);
  EXPECT_NEAR(fit.speedup[2], 1.6, 1e-12);
}

TEST(FitAmdahl, PerfectScalingIsZeroSerialFraction) {
  const ScalingFit fit = fit_amdahl("Conv", {1, 2, 4, 8}, {8, 4, 2, 1});
  EXPECT_NEAR(fit.serial_fraction, 0.0, 1e-12);
  EXPECT_NEAR(fit.r_squared, 1.0, 1e-12);
  EXPECT_DOUBLE_EQ(fit.speedup.back(), 8.0);
}

TEST(FitAmdahl, NoScalingIsSerialFractionOne) {
  const ScalingFit fit = fit_amdahl("Other", {1, 2, 4}, {5, 5, 5});
  EXPECT_NEAR(fit.serial_fraction, 1.0, 1e-12);
  EXPECT_DOUBLE_EQ(fit.r_squared, 1.0);  // no variance in speedups, and none left unexplained
}

TEST(FitAmdahl, ClampsSuperlinearNoiseToZero) {
  // Slightly better than perfect scaling (cache effects, noise) implies f < 0.
  const ScalingFit fit = fit_amdahl("Conv", {1, 2, 4}, {8.0, 3.9, 1.9});
  EXPECT_DOUBLE_EQ(fit.serial_fraction, 0.0);
  EXPECT_LT(fit.r_squared, 1.0);
  EXPECT_GT(fit.r_squared, 0.9);
}

TEST(FitAmdahl, ClampsSlowdownToOne) {
  const ScalingFit fit = fit_amdahl("Other", {1, 2, 4}, {4.0, 5.0, 6.0});
  EXPECT_DOUBLE_EQ(fit.serial_fraction, 1.0);
  EXPECT_LT(fit.r_squared, 1.0);
}

TEST(FitAmdahl, RejectsUnusableSeries) {
  EXPECT_THROW(fit_amdahl("x", {4}, {1.0}), UsageError);             // one count
  EXPECT_THROW(fit_amdahl("x", {}, {}), UsageError);                 // none
  EXPECT_THROW(fit_amdahl("x", {2, 2}, {1.0, 1.0}), UsageError);     // one distinct count
  EXPECT_THROW(fit_amdahl("x", {1, 2, 4}, {1.0, 0.5}), UsageError);  // sizes differ
  EXPECT_THROW(fit_amdahl("x", {1, 2}, {1.0, 0.0}), UsageError);     // zero time
  EXPECT_THROW(fit_amdahl("x", {1, 2}, {-1.0, 0.5}), UsageError);    // negative time
  EXPECT_THROW(fit_amdahl("x", {0, 2}, {1.0, 0.5}), UsageError);     // zero threads
  EXPECT_THROW(fit_amdahl("x", {1, 2}, {NAN, 0.5}), UsageError);     // not a number
}

// One category per behaviour at threads {1, 2, 4}: Conv scales perfectly (f = 0), MatMul
// has f = 0.5, uncosted leaves do not scale (f = 1); Pooling exists at 1 thread only and
// Reduction has no time at 4 threads, so neither can be fitted.
std::vector<StepProfile> scaling_profiles() {
  std::vector<StepProfile> profiles;
  for (int p : {1, 2, 4}) {
    StepProfile prof;
    prof.step_s = 3.0 + 5.0 / p;  // = 8 * (3/8 + 5/8 / p): step serial fraction 0.375
    prof.ops = {
        op("aten::conv", "forward", "", "Conv", profile::kCosted, 1, 4.0 / p),
        op("aten::addmm", "forward", "", "MatMul", profile::kCosted, 1, 1.0 + 1.0 / p),
        op("aten::weird", "forward", "", "Other", profile::kUncosted, 1, 1.0),
        op("aten::sum", "forward", "", "Reduction", profile::kCosted, 1, p == 4 ? 0.0 : 0.1),
    };
    if (p == 1)
      prof.ops.push_back(
          op("aten::max_pool2d", "forward", "", "Pooling", profile::kCosted, 1, 0.5));
    profiles.push_back(prof);
  }
  return profiles;
}

TEST(ThreadScaling, FitsStepThenCategoriesByBaselineTime) {
  const std::vector<ScalingFit> fits = thread_scaling({1, 2, 4}, scaling_profiles());
  std::vector<std::string> names;
  for (const ScalingFit& f : fits) names.push_back(f.name);
  EXPECT_EQ(names, (std::vector<std::string>{"step", "Conv", "MatMul", "uncosted"}));
  ASSERT_EQ(fits.size(), 4u);
  EXPECT_NEAR(fits[0].serial_fraction, 0.375, 1e-9);
  EXPECT_NEAR(fits[0].r_squared, 1.0, 1e-9);
  EXPECT_NEAR(fits[1].serial_fraction, 0.0, 1e-9);
  EXPECT_NEAR(fits[2].serial_fraction, 0.5, 1e-9);
  EXPECT_NEAR(fits[3].serial_fraction, 1.0, 1e-9);
  EXPECT_EQ(fits[2].time_s, (std::vector<double>{2.0, 1.5, 1.25}));
}

TEST(ThreadScaling, ProfilesMayComeInAnyThreadOrder) {
  std::vector<StepProfile> profiles = scaling_profiles();
  std::swap(profiles[0], profiles[2]);  // now {4, 2, 1}
  const std::vector<ScalingFit> fits = thread_scaling({4, 2, 1}, profiles);
  ASSERT_EQ(fits.size(), 4u);
  EXPECT_EQ(fits[1].name, "Conv");
  EXPECT_EQ(fits[1].threads, (std::vector<int>{1, 2, 4}));
  EXPECT_NEAR(fits[0].serial_fraction, 0.375, 1e-9);
}

TEST(ThreadScaling, RejectsMismatchedSizesAndSingleCount) {
  EXPECT_THROW(thread_scaling({1, 2}, scaling_profiles()), UsageError);
  std::vector<StepProfile> one = {scaling_profiles().front()};
  EXPECT_THROW(thread_scaling({1}, one), UsageError);
}

}  // namespace
}  // namespace plumb::analysis
