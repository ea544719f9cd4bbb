// Tests of plumb compare's logic: the bootstrap ratio interval and verdict on synthetic sample
// vectors (identical, clearly slower, tiny but significant, noisy, autocorrelated, replicated),
// environment and per-category differences, and selecting/matching runs from stores.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "plumb/analysis/comparison_inputs.h"
#include "plumb/core/errors.h"
#include "plumb/profile/profiler.h"
#include "plumb/store/profile_records.h"
#include "plumb/store/run_record.h"
#include "stored_runs.h"
#include "usage_error_check.h"

namespace plumb::analysis {
namespace {

namespace fs = std::filesystem;
using testing::noisy_samples;
using testing::store_synthetic_run;
using testing::SyntheticRun;

SideSamples one_run(std::vector<double> xs, double units = 8) {
  return {{std::move(xs)}, {units}, {}};
}

// AR(1) step times: x_t = mean + phi (x_{t-1} - mean) + noise, strongly autocorrelated for phi
// near 1 (what drifting clocks and background load produce).
std::vector<double> ar1_samples(double mean, double sigma, double phi, size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0, sigma);
  std::vector<double> xs(n);
  double deviation = 0;
  for (double& x : xs) {
    deviation = phi * deviation + noise(rng);
    x = mean + deviation;
  }
  return xs;
}

TEST(RunComparison, IdenticalSamplesGiveNoSignificantDifference) {
  const auto xs = noisy_samples(0.01, 0.03, 300, 7);
  const auto c = compare_throughput(one_run(xs), one_run(xs), {});
  EXPECT_DOUBLE_EQ(c.ratio, 1.0);
  EXPECT_LT(c.ci_low, 1.0);
  EXPECT_GT(c.ci_high, 1.0);
  EXPECT_EQ(c.verdict, Verdict::kNoSignificantDifference);
  EXPECT_EQ(c.samples_a, 300u);
}

TEST(RunComparison, ClearSlowdownIsSlower) {
  const auto c = compare_throughput(one_run(noisy_samples(0.010, 0.02, 200, 1)),
                                    one_run(noisy_samples(0.011, 0.02, 200, 2)), {});
  EXPECT_NEAR(c.ratio, 1 / 1.1, 0.01);
  EXPECT_LT(c.ci_high, 1 / 1.02);
  EXPECT_LT(c.ci_low, c.ratio);
  EXPECT_GT(c.ci_high, c.ratio);
  EXPECT_EQ(c.verdict, Verdict::kSlower) << c.reason;
}

TEST(RunComparison, SwappingSidesSwapsTheVerdict) {
  const auto slow = one_run(noisy_samples(0.011, 0.02, 200, 2));
  const auto fast = one_run(noisy_samples(0.010, 0.02, 200, 1));
  const auto c = compare_throughput(slow, fast, {});
  EXPECT_EQ(c.verdict, Verdict::kFaster) << c.reason;
  EXPECT_NEAR(c.ratio, 1.1, 0.015);
  EXPECT_GT(c.ci_low, 1.02);
}

TEST(RunComparison, TinySignificantDifferenceWithinToleranceIsNotCalled) {
  // A very quiet benchmark, 0.5% slower: significant, but far below the 2% tolerance.
  const auto a = one_run(noisy_samples(0.010, 0.001, 500, 3));
  const auto b = one_run(noisy_samples(0.01005, 0.001, 500, 4));
  const auto c = compare_throughput(a, b, {});
  EXPECT_LT(c.ci_high, 1.0) << "the difference should be statistically significant";
  EXPECT_EQ(c.verdict, Verdict::kNoSignificantDifference) << c.reason;
  EXPECT_NE(c.reason.find("tolerance"), std::string::npos) << c.reason;
  // Without a tolerance the same data is a slowdown: the tolerance is what protects it.
  ComparisonOptions strict;
  strict.tolerance = 0;
  EXPECT_EQ(compare_throughput(a, b, strict).verdict, Verdict::kSlower);
}

// B = A's samples in another order, each 6% longer: the sample means differ by exactly 6%.
SideSamples shifted(const std::vector<double>& xs, double factor) {
  std::vector<double> ys = xs;
  std::shuffle(ys.begin(), ys.end(), std::mt19937_64(77));
  for (double& y : ys) y *= factor;
  return one_run(ys);
}

TEST(RunComparison, NoisyModerateShiftIsNotCalled) {
  // 30% CV and 20 samples: a 6% shift is within this benchmark's own noise.
  const auto noisy = noisy_samples(0.010, 0.30, 20, 5);
  const auto c = compare_throughput(one_run(noisy), shifted(noisy, 1.06), {});
  EXPECT_NEAR(c.ratio, 1 / 1.06, 1e-9);
  EXPECT_EQ(c.verdict, Verdict::kNoSignificantDifference) << c.reason;
  EXPECT_GT(c.ci_high - c.ci_low, 0.1);
  // The same shift on a quiet benchmark is called: the verdict follows each benchmark's noise.
  const auto quiet = noisy_samples(0.010, 0.01, 200, 5);
  const auto q = compare_throughput(one_run(quiet), shifted(quiet, 1.06), {});
  EXPECT_EQ(q.verdict, Verdict::kSlower) << q.reason;
}

TEST(RunComparison, SameSeedSameIntervalDifferentSeedDifferentInterval) {
  const auto a = one_run(noisy_samples(0.010, 0.05, 100, 8));
  const auto b = one_run(noisy_samples(0.010, 0.05, 100, 9));
  const auto first = compare_throughput(a, b, {});
  const auto second = compare_throughput(a, b, {});
  EXPECT_EQ(first.ci_low, second.ci_low);
  EXPECT_EQ(first.ci_high, second.ci_high);
  ComparisonOptions other;
  other.seed = 99;
  EXPECT_NE(compare_throughput(a, b, other).ci_low, first.ci_low);
}

TEST(RunComparison, BlockLengthFollowsAutocorrelation) {
  EXPECT_EQ(block_length({1, 2, 3}), 1u);
  EXPECT_EQ(block_length(std::vector<double>(1000, 0.01)), 10u);  // constant: n^(1/3)
  EXPECT_EQ(block_length(noisy_samples(0.01, 0.02, 1000, 10)), 10u);
  EXPECT_GT(block_length(ar1_samples(0.01, 0.0002, 0.95, 1000, 11)), 20u);
}

TEST(RunComparison, AutocorrelatedSamplesGetAWiderInterval) {
  // The same values, once in their drifting order and once shuffled: a bootstrap that treated
  // the samples as independent would give both the same interval.
  const auto drifting = ar1_samples(0.01, 0.0002, 0.95, 600, 12);
  auto shuffled = drifting;
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937_64(13));
  const auto reference = one_run(noisy_samples(0.01, 0.001, 600, 14));
  const auto in_order = compare_throughput(reference, one_run(drifting), {});
  const auto independent = compare_throughput(reference, one_run(shuffled), {});
  EXPECT_GT(in_order.ci_high - in_order.ci_low, 2 * (independent.ci_high - independent.ci_low));
}

TEST(RunComparison, ReplicateRunsBringBetweenRunVariation) {
  // Each run is quiet, but the runs of a side disagree by +-6%: a 3% shift is not significant.
  SideSamples a, b;
  const double run_means[] = {0.0100, 0.0106, 0.0094};
  for (int r = 0; r < 3; ++r) {
    a.runs_step_s.push_back(noisy_samples(run_means[r], 0.005, 200, 20 + r));
    b.runs_step_s.push_back(noisy_samples(1.03 * run_means[(r + 1) % 3], 0.005, 200, 30 + r));
    a.units_per_step.push_back(8);
    b.units_per_step.push_back(8);
  }
  const auto c = compare_throughput(a, b, {});
  EXPECT_EQ(c.runs_a, 3u);
  EXPECT_EQ(c.verdict, Verdict::kNoSignificantDifference) << c.reason;
  EXPECT_GT(c.ci_high - c.ci_low, 0.05);
}

TEST(RunComparison, BetweenRunSpreadPoolsLogThroughputWithinGroups) {
  // Two groups of two: deviations from each group's own mean, so the groups' different levels
  // (another plumb build, another tag) are no noise.
  const BetweenRunSpread s = between_run_spread({{100, 110}, {50, 50 * 1.1}, {70}});
  EXPECT_EQ(s.dof, 2u);
  EXPECT_NEAR(s.sd, std::log(1.1) / std::sqrt(2.0), 1e-12);
  EXPECT_EQ(between_run_spread({{100}, {90}}).dof, 0u);
  EXPECT_TRUE(std::isnan(between_run_spread({{100}, {}}).sd));
}

// One quiet run per side, B 6% slower, replicate groups with the given run-to-run spread.
ThroughputComparison single_runs_with_history(const std::vector<double>& history) {
  SideSamples a = one_run(noisy_samples(0.0100, 0.01, 400, 3));
  SideSamples b = one_run(noisy_samples(0.0106, 0.01, 400, 4));
  if (!history.empty()) {
    a.replicate_groups = {history};
    a.replicate_groups.front().push_back(8 / 0.0100);  // the side's own run
    b.replicate_groups = {{8 / 0.0106}};
  }
  return compare_throughput(a, b, {});
}

TEST(RunComparison, EarlierRunsThatDisagreeWidenTheInterval) {
  const auto alone = single_runs_with_history({});
  EXPECT_EQ(alone.verdict, Verdict::kSlower) << alone.reason;
  EXPECT_EQ(alone.between_runs.dof, 0u);
  EXPECT_NE(alone.reason.find("between-run variation unknown"), std::string::npos);
  // Earlier runs of A's setting moved by about 8% from run to run: 6% is within that noise.
  const auto noisy = single_runs_with_history({800 * 1.08, 800 * 0.93, 800 * 1.01});
  EXPECT_EQ(noisy.between_runs.dof, 3u);
  EXPECT_EQ(noisy.verdict, Verdict::kNoSignificantDifference) << noisy.reason;
  EXPECT_LT(noisy.ci_low, alone.ci_low);
  EXPECT_GT(noisy.ci_high, alone.ci_high);
  EXPECT_NE(noisy.reason.find("dof)"), std::string::npos) << noisy.reason;
  // Earlier runs that agree to 0.5% keep the verdict: replicates cost power only when the
  // machine is noisy.
  const auto quiet = single_runs_with_history({800 * 1.005, 800 * 0.995, 800 * 1.0});
  EXPECT_EQ(quiet.verdict, Verdict::kSlower) << quiet.reason;
}

TEST(RunComparison, ReplicatesDetectAShiftLargerThanTheirSpread) {
  // Five runs per side, runs 2% apart, B 10% slower: the t interval excludes the band.
  SideSamples a, b;
  const double offsets[] = {1.00, 1.02, 0.98, 1.01, 0.99};
  for (int r = 0; r < 5; ++r) {
    a.runs_step_s.push_back(noisy_samples(0.0100 * offsets[r], 0.02, 100, 40 + r));
    b.runs_step_s.push_back(noisy_samples(0.0110 * offsets[(r + 2) % 5], 0.02, 100, 50 + r));
    a.units_per_step.push_back(8);
    b.units_per_step.push_back(8);
  }
  const auto c = compare_throughput(a, b, {});
  EXPECT_EQ(c.between_runs.dof, 8u);
  EXPECT_NEAR(c.between_runs.sd, 0.016, 0.006);
  EXPECT_EQ(c.verdict, Verdict::kSlower) << c.reason;
}

TEST(RunComparison, ResolutionSaysWhatTheRunsCouldSee) {
  // 12 runs per side varying by 5.4% (log SD; 22 dof): margin = log 1.02 + (t_0.975(22) +
  // t_0.95(22)) * 0.054 * sqrt(2/12) = 0.019803 + (2.07387 + 1.71714) * 0.022045 = 0.103376,
  // so a throughput loss of 1 - exp(-0.103376) = 9.82% is called 19 times in 20.
  const ComparisonOptions o;
  const Resolution r = resolution({0.054, 22}, 12, 12, o);
  EXPECT_NEAR(r.detectable_change, 0.09822, 0.0002);
  // 10% (log 0.10536): 11 runs per side give a margin of 0.10755, 12 give 0.10338.
  EXPECT_EQ(r.runs_per_side_to_detect, 12u);
  // Fewer runs or noisier runs resolve less; the runs needed for 10% do not depend on how many
  // this comparison had.
  const Resolution six = resolution({0.054, 10}, 6, 6, o);
  EXPECT_GT(six.detectable_change, r.detectable_change);
  EXPECT_EQ(six.runs_per_side_to_detect, 12u);
  EXPECT_GT(resolution({0.08, 22}, 12, 12, o).runs_per_side_to_detect, 12u);
  // Degrees of freedom from earlier runs stay with every k: fewer runs are needed.
  EXPECT_LT(resolution({0.054, 22 + 40}, 12, 12, o).runs_per_side_to_detect, 12u);
  // Unknown spread: nothing to say. Identical runs: only the tolerance band is left.
  EXPECT_TRUE(std::isnan(resolution({}, 1, 1, o).detectable_change));
  EXPECT_EQ(resolution({}, 1, 1, o).runs_per_side_to_detect, 0u);
  EXPECT_NEAR(resolution({0.0, 4}, 3, 3, o).detectable_change, 1 - 1 / 1.02, 1e-12);
  // Beyond kMaxRunsPerSide: reported as 0.
  EXPECT_EQ(resolution({2.0, 4}, 3, 3, o).runs_per_side_to_detect, 0u);
}

// Side of k runs whose log throughputs are normal around log(units / mean_s) with SD sd; every
// run's samples are constant, so only the between-run variation is in the interval.
SideSamples replicated_side(double mean_s, double sd, size_t k, std::mt19937_64& rng) {
  std::normal_distribution<double> noise(0, sd);
  SideSamples side;
  for (size_t r = 0; r < k; ++r) {
    side.runs_step_s.push_back(std::vector<double>(4, mean_s * std::exp(noise(rng))));
    side.units_per_step.push_back(8);
  }
  return side;
}

TEST(RunComparison, ADetectableChangeIsCalledNineteenTimesInTwenty) {
  // The resolution's promise checked by simulation: 8 runs per side varying by 5%; a slowdown
  // of exactly the detectable size is called "slower" in about 95% of 400 comparisons, half
  // of it far less often, and identical sides almost never.
  ComparisonOptions o;
  o.resamples = 200;
  const size_t k = 8, trials = 400;
  const double sd = 0.05;
  const double change = resolution({sd, 2 * (k - 1)}, k, k, o).detectable_change;
  ASSERT_GT(change, 0.05);
  ASSERT_LT(change, 0.15);
  std::mt19937_64 rng(7);
  auto slower_rate = [&](double loss) {
    size_t slower = 0;
    for (size_t i = 0; i < trials; ++i) {
      const SideSamples a = replicated_side(0.01, sd, k, rng);
      const SideSamples b = replicated_side(0.01 / (1 - loss), sd, k, rng);
      if (compare_throughput(a, b, o).verdict == Verdict::kSlower) ++slower;
    }
    return static_cast<double>(slower) / trials;
  };
  const double at_change = slower_rate(change);
  EXPECT_GT(at_change, 0.91);
  EXPECT_LT(at_change, 0.99);
  EXPECT_LT(slower_rate(change / 2), 0.6);
  EXPECT_LT(slower_rate(0), 0.02);
}

TEST(RunComparison, TooFewSamplesIsNotComparable) {
  const auto c = compare_throughput(one_run({0.01}), one_run(noisy_samples(0.01, 0.01, 50, 1)), {});
  EXPECT_EQ(c.verdict, Verdict::kNotComparable);
  EXPECT_NE(c.reason.find("side A"), std::string::npos) << c.reason;
  EXPECT_EQ(compare_throughput(one_run({0.01, 0.01}), SideSamples{}, {}).verdict,
            Verdict::kNotComparable);
}

TEST(RunComparison, JudgeUsesTheWholeIntervalAndALogSymmetricBand) {
  EXPECT_EQ(judge(0.95, 0.979, 0.02), Verdict::kSlower);
  EXPECT_EQ(judge(0.95, 0.985, 0.02), Verdict::kNoSignificantDifference);
  EXPECT_EQ(judge(1.021, 1.05, 0.02), Verdict::kFaster);
  EXPECT_EQ(judge(1.019, 1.05, 0.02), Verdict::kNoSignificantDifference);
  EXPECT_EQ(judge(0.99, 1.01, 0), Verdict::kNoSignificantDifference);
}

TEST(RunComparison, OptionsAreValidated) {
  ComparisonOptions o;
  o.tolerance = -0.1;
  EXPECT_THROW(validate_comparison_options(o), UsageError);
  o = {};
  o.confidence = 1;
  EXPECT_THROW(validate_comparison_options(o), UsageError);
  o = {};
  o.resamples = 10;
  EXPECT_THROW(validate_comparison_options(o), UsageError);
  o = {};
  o.detect = 0.015;  // inside the 2% band: never called
  EXPECT_THROW(validate_comparison_options(o), UsageError);
  o.detect = 1;
  EXPECT_THROW(validate_comparison_options(o), UsageError);
  o.detect = 0.05;
  EXPECT_NO_THROW(validate_comparison_options(o));
}

TEST(ComparisonContext, EnvironmentFieldsFlagWhatDiffers) {
  SyntheticRun s;
  auto env_a = testing::synthetic_environment(s);
  auto env_b = env_a;
  env_b.load_average_1m = env_a.load_average_1m + 0.3;  // within kLoadAverageTolerance
  for (const auto& f : environment_fields({env_a}, {env_b})) EXPECT_FALSE(f.differs) << f.field;
  env_b.cpu_model = "Other CPU";
  env_b.libtorch_version = "2.1.0";
  env_b.load_average_1m = 3.5;
  std::vector<std::string> differing;
  for (const auto& f : environment_fields({env_a}, {env_b}))
    if (f.differs) differing.push_back(f.field);
  EXPECT_EQ(differing, (std::vector<std::string>{"cpu_model", "libtorch_version",
                                                 "load_average_1m (highest at a run's start)"}));
  // A side whose runs disagree lists both values.
  const auto fields = environment_fields({env_a, env_b}, {env_a});
  auto cpu = std::find_if(fields.begin(), fields.end(),
                          [](const auto& f) { return f.field == "cpu_model"; });
  ASSERT_NE(cpu, fields.end());
  EXPECT_EQ(cpu->a, s.cpu_model + " | Other CPU");
  EXPECT_TRUE(cpu->differs);
}

profile::OpStat op(const std::string& category, double self_s) {
  // OpStat's fields in order.
  return {
      "aten::" + category, "forward", "", category, profile::kCosted, "", 0, self_s, 0, 0, 0, 0, 0};
}

TEST(ComparisonContext, CategoryDeltasExplainTheStepDelta) {
  profile::StepProfile a, b;
  a.ops = {op("MatMul", 0.006), op("Elementwise", 0.002)};
  a.step_s = 0.010;  // 2 ms outside operators
  b.ops = {op("MatMul", 0.009), op("Elementwise", 0.002), op("Conv", 0.0005)};
  b.step_s = 0.014;  // 2.5 ms outside operators
  const auto deltas = category_deltas(a, b);
  ASSERT_EQ(deltas.size(), 4u);
  EXPECT_EQ(deltas[0].category, "MatMul");
  EXPECT_NEAR(deltas[0].delta_s, 0.003, 1e-12);
  EXPECT_NEAR(deltas[0].share_of_delta, 0.75, 1e-9);
  double share_sum = 0;
  for (const auto& d : deltas) share_sum += d.share_of_delta;
  EXPECT_NEAR(share_sum, 1.0, 1e-9);
  auto outside = std::find_if(deltas.begin(), deltas.end(),
                              [](const auto& d) { return d.category == kOutsideOperators; });
  ASSERT_NE(outside, deltas.end());
  EXPECT_NEAR(outside->delta_s, 0.0005, 1e-12);
}

// Stores in a fresh directory.
class CompareSources : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "plumb_compare_test.XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  int64_t store(const std::string& db, const SyntheticRun& s) {
    return store_synthetic_run(*store::ResultsStore::open(path(db)), s);
  }
  ComparisonRequest request(const std::string& db_a, const std::string& db_b) const {
    ComparisonRequest q;
    q.a.db = path(db_a);
    q.b.db = path(db_b);
    return q;
  }
  // Tag "old" of p.db against tag "new".
  ComparisonRequest old_vs_new() const {
    auto q = request("p.db", "p.db");
    q.a.filters["tag"] = "old";
    q.b.filters["tag"] = "new";
    return q;
  }
  fs::path dir_;
};

TEST_F(CompareSources, RunIdsCompareTheGivenRuns) {
  SyntheticRun s;
  const int64_t a = store("p.db", s);
  s.mean_s *= 1.10;
  s.seed = 2;
  s.threads = 2;  // explicit runs may differ in anything but workload and mode
  const int64_t b = store("p.db", s);
  auto q = request("p.db", "p.db");
  q.a.run_ids = {a};
  q.b.run_ids = {b};
  const Comparison c = compare_sources(q);
  ASSERT_EQ(c.rows.size(), 1u);
  EXPECT_EQ(c.rows[0].throughput.verdict, Verdict::kSlower);
  EXPECT_TRUE(c.slowdown_found());
  EXPECT_EQ(c.rows[0].key_differences, (std::vector<std::string>{"threads: 1 -> 2"}));
  EXPECT_EQ(c.label_a, "run 1 of p.db");
}

TEST_F(CompareSources, TwoDatabasesUseTheNewestRunPerSettingAndListUnmatched) {
  SyntheticRun s;
  store("a.db", s);
  s.seed = 3;
  const int64_t newest = store("a.db", s);
  SyntheticRun only_a = s;
  only_a.workload = "fake/only_a";
  store("a.db", only_a);
  s.seed = 4;
  store("b.db", s);
  SyntheticRun other_batch = s;
  other_batch.batch = 16;
  store("b.db", other_batch);
  const Comparison c = compare_sources(request("a.db", "b.db"));
  ASSERT_EQ(c.rows.size(), 1u);
  EXPECT_EQ(c.rows[0].runs_a, (std::vector<int64_t>{newest}));
  EXPECT_EQ(c.rows[0].throughput.verdict, Verdict::kNoSignificantDifference);
  EXPECT_FALSE(c.slowdown_found());
  EXPECT_EQ(c.only_in_a, (std::vector<std::string>{"fake/only_a train batch=8 threads=1"}));
  EXPECT_EQ(c.only_in_b, (std::vector<std::string>{"fake/mlp train batch=16 threads=1"}));
  // Every run of a setting as replicates.
  auto all = request("a.db", "b.db");
  all.all_runs = true;
  EXPECT_EQ(compare_sources(all).rows[0].runs_a.size(), 2u);
}

TEST_F(CompareSources, TagsSelectGroupsAndEnvironmentDifferencesAreListed) {
  SyntheticRun s;
  s.tag = "old";
  store("p.db", s);
  s.tag = "new";
  s.seed = 5;
  s.cpu_model = "Faster CPU";
  s.mean_s = 0.008;
  store("p.db", s);
  const Comparison c = compare_sources(old_vs_new());
  ASSERT_EQ(c.rows.size(), 1u);
  EXPECT_EQ(c.rows[0].throughput.verdict, Verdict::kFaster);
  auto cpu = std::find_if(c.environment.begin(), c.environment.end(),
                          [](const auto& f) { return f.field == "cpu_model"; });
  ASSERT_NE(cpu, c.environment.end());
  EXPECT_TRUE(cpu->differs);
  EXPECT_EQ(cpu->b, "Faster CPU");
  // The JSON lists the environment before the comparisons.
  const auto j = comparison_json(c);
  std::vector<std::string> keys;
  for (const auto& item : j.items()) keys.push_back(item.key());
  EXPECT_LT(std::find(keys.begin(), keys.end(), "environment"),
            std::find(keys.begin(), keys.end(), "comparisons"));
  EXPECT_EQ(j["comparisons"][0]["verdict"], "faster");
}

TEST_F(CompareSources, NoisyConditionsOnBothSidesAreNoted) {
  SyntheticRun s;
  s.tag = "old";
  s.warning =
      "other processes kept 1.1 of 2 cores busy just before the run: they compete for the CPU";
  store("p.db", s);
  s.tag = "new";
  s.warning =
      "other processes kept 0.9 of 2 cores busy just before the run: they compete for the CPU";
  store("p.db", s);
  const Comparison c = compare_sources(old_vs_new());
  auto warnings = std::find_if(c.environment.begin(), c.environment.end(),
                               [](const auto& f) { return f.field == "warnings"; });
  ASSERT_NE(warnings, c.environment.end());
  EXPECT_FALSE(warnings->differs);  // the same condition with other figures
  EXPECT_TRUE(std::any_of(c.notes.begin(), c.notes.end(), [](const std::string& note) {
    return note.find("noisy conditions") != std::string::npos;
  }));
}

TEST_F(CompareSources, FiltersThatDifferMatchOtherwiseEqualSettings) {
  SyntheticRun s;
  for (int threads : {1, 4}) {
    s.threads = threads;
    s.seed = static_cast<uint64_t>(threads);
    for (const char* workload : {"fake/mlp", "fake/cnn"}) {
      s.workload = workload;
      store("p.db", s);
    }
  }
  auto q = request("p.db", "p.db");
  q.a.filters["threads"] = "1";
  q.b.filters["threads"] = "4";
  const Comparison c = compare_sources(q);
  ASSERT_EQ(c.rows.size(), 2u);
  EXPECT_EQ(c.ignored_fields, (std::vector<std::string>{"threads"}));
  EXPECT_EQ(c.rows[0].key_differences, (std::vector<std::string>{"threads: 1 -> 4"}));
  // Without the filters the same runs only match with --ignore threads (and then both sides
  // are the same runs, which is refused).
  auto ignore = request("p.db", "p.db");
  ignore.ignore = {"threads"};
  EXPECT_THROW(compare_sources(ignore), UsageError);
}

TEST_F(CompareSources, ProfilesOnBothSidesGiveCategoryDeltas) {
  SyntheticRun s;
  s.tag = "old";
  store("p.db", s);
  s.tag = "new";
  store("p.db", s);
  auto db = store::ResultsStore::open(path("p.db"));
  for (const char* tag : {"old", "new"}) {
    profile::ProfileResult p;
    p.profile.ops = {op("MatMul", std::string(tag) == "old" ? 0.006 : 0.008)};
    p.profile.step_s = std::string(tag) == "old" ? 0.01 : 0.012;
    p.profile.steps = 3;
    s.tag = tag;
    db->save_profile(testing::synthetic_options(s), p, testing::synthetic_environment(s), "g", tag);
  }
  const Comparison c = compare_sources(old_vs_new());
  ASSERT_EQ(c.rows.size(), 1u);
  ASSERT_FALSE(c.rows[0].categories.empty());
  EXPECT_EQ(c.rows[0].categories[0].category, "MatMul");
  EXPECT_NEAR(c.rows[0].categories[0].delta_s, 0.002, 1e-12);
}

TEST_F(CompareSources, EarlierRunsOfTheSameSettingAndConditionsGiveTheBetweenRunSpread) {
  SyntheticRun s;
  s.cv = 0.005;
  s.tag = "old";
  // No replicates: a run of another setting, and one on another machine far from the rest.
  s.batch = 16;
  store("p.db", s);
  s.batch = 8;
  s.cpu_model = "Other CPU";
  s.mean_s = 0.020;
  store("p.db", s);
  s.cpu_model = SyntheticRun{}.cpu_model;
  // Four runs of tag "old" that moved by up to 8% from run to run, then one of tag "new" 5%
  // slower than the newest "old" one: no significant difference once the history counts.
  for (double factor : {1.08, 0.93, 1.02, 1.00}) {
    s.mean_s = 0.010 * factor;
    ++s.seed;
    store("p.db", s);
  }
  s.tag = "new";
  s.mean_s = 0.0105;
  store("p.db", s);
  const Comparison c = compare_sources(old_vs_new());
  ASSERT_EQ(c.rows.size(), 1u);
  const auto& t = c.rows[0].throughput;
  EXPECT_EQ(c.rows[0].runs_a, (std::vector<int64_t>{6}));  // newest only, the rest is history
  EXPECT_EQ(t.between_runs.dof, 3u);
  EXPECT_NEAR(t.between_runs.sd, 0.063, 0.01);
  EXPECT_EQ(t.verdict, Verdict::kNoSignificantDifference) << t.reason;
  for (const auto& note : c.notes) EXPECT_EQ(note.find("not between runs"), std::string::npos);
}

TEST_F(CompareSources, RunsOfTheOtherSideAreNeverReplicates) {
  // Runs 1-3 share every condition; comparing run 1 with run 2 must not count run 2 as a
  // replicate of run 1 (its difference is what is being tested), but run 3 is one.
  SyntheticRun s;
  const int64_t first = store("p.db", s);
  s.mean_s = 0.012;
  s.seed = 2;
  const int64_t second = store("p.db", s);
  s.mean_s = 0.0101;
  s.seed = 3;
  store("p.db", s);
  auto q = request("p.db", "p.db");
  q.a.run_ids = {first};
  q.b.run_ids = {second};
  const auto& t = compare_sources(q).rows[0].throughput;
  EXPECT_EQ(t.between_runs.dof, 1u);
  EXPECT_NEAR(t.between_runs.sd, std::log(1.01) / std::sqrt(2.0), 2e-3);
}

TEST_F(CompareSources, OneRunPerSideWithoutHistoryIsNoted) {
  SyntheticRun s;
  store("a.db", s);
  store("b.db", s);
  const Comparison c = compare_sources(request("a.db", "b.db"));
  EXPECT_EQ(c.rows[0].throughput.between_runs.dof, 0u);
  EXPECT_TRUE(std::any_of(c.notes.begin(), c.notes.end(), [](const std::string& n) {
    return n.find("not between runs") != std::string::npos;
  }));
}

TEST_F(CompareSources, BadInputIsAUsageErrorNamingTheFix) {
  SyntheticRun s;
  store("p.db", s);
  SyntheticRun other = s;
  other.workload = "fake/other";
  store("p.db", other);
  auto expect_error = [](const ComparisonRequest& q, const std::string& needle) {
    expect_usage_error([&] { compare_sources(q); }, {needle});
  };
  auto unknown = request("p.db", "p.db");
  unknown.a.run_ids = {1};
  unknown.b.run_ids = {42};
  expect_error(unknown, "run 42 is not in");
  auto same = request("p.db", "p.db");
  expect_error(same, "both select run 1");
  auto different = request("p.db", "p.db");
  different.a.run_ids = {1};
  different.b.run_ids = {2};
  expect_error(different, "compare runs of the same workload and mode");
  other.workload = "fake/elsewhere";
  store("q.db", other);
  expect_error(request("p.db", "q.db"), "no workload setting is on both sides");
  auto no_tag = request("p.db", "p.db");
  no_tag.a.filters["tag"] = "nope";
  expect_error(no_tag, "selects no runs");
  std::ofstream(path("junk.db")) << "not a database";
  expect_error(request("p.db", "junk.db"), "junk.db");
  expect_error(request("p.db", "missing.db"), "missing.db");
}

}  // namespace
}  // namespace plumb::analysis
