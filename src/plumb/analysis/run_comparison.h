// Run-vs-run comparison statistics (plumb compare): the throughput ratio of side B over side A
// with a bootstrap confidence interval from the stored step-time samples, and the verdict
// (faster, slower, no significant difference). Pure functions over sample vectors, so the
// rules are tested on synthetic data; selecting the samples from a store is
// comparison_inputs.h's job.
//
// Method (docs/compare.md):
// - Throughput of a run = units per step / mean step time (the mean, not the median: total
//   work over total time is what a user gets). A side with several runs (replicates) has the
//   mean of its runs' throughputs.
// - Step times within a run are autocorrelated (thermal and frequency drift, allocator and
//   cache state, background load come in bursts), so resampling single samples as if they
//   were independent gives intervals that are too narrow. Each run is resampled with a
//   circular block bootstrap (blocks of block_length() consecutive samples); when a side has
//   several runs, the runs themselves are resampled first (a cluster bootstrap), so the
//   between-run variation — usually larger than the within-run one — widens the interval.
// - The percentile bootstrap interval of the ratio is seeded, so the same inputs always give
//   the same answer. It covers the noise within runs; on a real machine separate runs of the
//   same benchmark differ by more than that (the state of caches, memory and neighbours
//   changes over seconds), so a verdict from it alone calls noise a change.
// - Between-run variation: every side brings replicate groups, runs of the same setting
//   measured under the same conditions (the side's own runs, and earlier runs in its database
//   from the same machine, libraries, plumb build and tag). The spread of log run throughput
//   within each group, pooled over groups, estimates how much one run's throughput moves from
//   run to run (s, with dof = runs - groups). When dof >= 1 the interval is also
//   log ratio +- t(dof) * s * sqrt(1/k_A + 1/k_B) (k: runs used per side, the two-sample t
//   interval), and the reported interval is the union of the two: never narrower than either
//   noise. With dof = 0 (one run per side, no earlier runs) the between-run variation is
//   unknown and the result says so.
// - Verdict: "slower" only when the whole interval lies below 1 / (1 + tolerance), "faster"
//   only when it lies above 1 + tolerance; otherwise "no significant difference" (as
//   criterion.rs does with its noise threshold). A noisy benchmark thus needs a larger
//   difference to be called than a quiet one, and a significant but tiny difference on a very
//   quiet benchmark is not called a regression. The band is symmetric in log space, so
//   swapping A and B swaps "faster" and "slower" exactly.
// - Resolution: what these runs could have seen. With a between-run SD s, k_A and k_B runs
//   and tolerance t, a true change of log size d is called with probability p (the detection
//   power, 95%: "19 times in 20") when d >= log(1 + t) + (t_c(dof) + t_p(dof)) * s *
//   sqrt(1/k_A + 1/k_B), t_c the interval's two-sided critical value and t_p the one-sided
//   p quantile. That smallest d, as a fraction of throughput, is the detectable change; the
//   same inequality solved for k (equal per side, each new pair of runs adding its dof) gives
//   the runs per side needed to resolve a change the user names (--detect, default 10%). A
//   "no significant difference" is then read against it: no change *larger than this* is
//   likely, not "nothing changed".
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "plumb/core/ratio_interval.h"

namespace plumb::analysis {

struct ComparisonOptions {
  double tolerance = 0.02;   // practical-equivalence band: ratios within [1/(1+t), 1+t]
  double confidence = 0.95;  // of the bootstrap interval
  size_t resamples = 2000;   // bootstrap replicates
  uint64_t seed = 20180924;  // fixed: the same inputs give the same interval
  double detect = 0.10;      // the change runs_per_side_to_detect is computed for (fraction)
};

// The probability with which a change of the detectable size is called (see above).
inline constexpr double kDetectionPower = 0.95;
// The most runs per side the resolution search considers.
inline constexpr size_t kMaxRunsPerSide = 1000;

// Throws UsageError when an option is out of range (tolerance in [0, 1), confidence in
// (0, 1), at least 100 resamples, detect in (0, 1) and beyond the tolerance band).
void validate_comparison_options(const ComparisonOptions& options);

// The measurements of one side for one workload setting.
struct SideSamples {
  std::vector<std::vector<double>> runs_step_s;  // per run: every measured step time, seconds
  std::vector<double> units_per_step;            // per run (images per batch ...)
  // Throughputs (units/s) of runs of this setting grouped by the conditions they were measured
  // under, this side's own runs included. Empty: the side's runs are one group.
  std::vector<std::vector<double>> replicate_groups;
};

// Pooled standard deviation of log throughput within replicate groups (about the relative SD
// of one run's throughput) and its degrees of freedom (runs - groups, over groups of 2+ runs).
struct BetweenRunSpread {
  double sd = std::numeric_limits<double>::quiet_NaN();
  size_t dof = 0;  // 0: unknown (no group has two runs); sd is then NaN
};
BetweenRunSpread between_run_spread(const std::vector<std::vector<double>>& groups);

// What a comparison with this between-run spread and these run counts can resolve.
struct Resolution {
  // Smallest throughput loss (fraction, 0.12 = 12%) called "slower" with kDetectionPower; the
  // same change in log size upwards is called "faster" as often. NaN when the spread is unknown.
  double detectable_change = std::numeric_limits<double>::quiet_NaN();
  // Runs per side (equal on both sides) with which a change of options.detect would be called
  // with kDetectionPower; 0 when the spread is unknown or more than kMaxRunsPerSide are needed.
  size_t runs_per_side_to_detect = 0;
};
Resolution resolution(const BetweenRunSpread& spread, size_t runs_a, size_t runs_b,
                      const ComparisonOptions& options);

enum class Verdict { kFaster, kSlower, kNoSignificantDifference, kNotComparable };
// "faster", "slower", "no significant difference", "not comparable".
const char* verdict_name(Verdict verdict);

struct ThroughputComparison {
  double throughput_a = 0, throughput_b = 0;  // units/s
  double ratio = 0;                           // throughput_b / throughput_a (> 1: B faster)
  double ci_low = 0, ci_high = 0;             // bootstrap interval of the ratio
  size_t runs_a = 0, runs_b = 0;
  size_t samples_a = 0, samples_b = 0;  // all runs together
  double cv_a = 0, cv_b = 0;            // step-time CV, pooled over the side's samples
  size_t block_a = 0, block_b = 0;      // bootstrap block length (largest over the side's runs)
  BetweenRunSpread between_runs;        // over both sides' replicate groups
  Resolution resolution;                // what these runs could resolve
  Verdict verdict = Verdict::kNotComparable;
  std::string reason;  // one line saying why this verdict
};

// The ratio and its interval, for the shared text and JSON of core/ratio_interval.h.
inline RatioInterval ratio_interval(const ThroughputComparison& c) {
  return {c.ratio, c.ci_low, c.ci_high};
}

// Circular-block length for one run's samples: at least n^(1/3) (the rate that is optimal for
// the variance of a mean, Hall, Horowitz & Jing 1995) and at least twice the lag after which
// the sample autocorrelation stays insignificant (the first step of Politis & White's 2004
// automatic selection, without their flat-top refinement); at most n / 2. 1 for n < 4.
size_t block_length(const std::vector<double>& samples);

// Verdict for a ratio interval and tolerance (see the top of this file).
Verdict judge(double ci_low, double ci_high, double tolerance);

// Compares B with A. A side without a run, with a run of no sample or a non-positive unit
// count, is kNotComparable with every figure NaN (reason says which). A side with a run of one
// sample is kNotComparable too, but its throughputs and ratio are known: only the interval
// (and what depends on it) is NaN, since one sample has no spread. Nothing else is rejected.
ThroughputComparison compare_throughput(const SideSamples& a, const SideSamples& b,
                                        const ComparisonOptions& options);

}  // namespace plumb::analysis
