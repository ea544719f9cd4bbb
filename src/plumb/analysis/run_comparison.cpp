// Run-vs-run comparison statistics: block bootstrap of the throughput ratio, the between-run
// interval from replicate groups, and the verdict (see run_comparison.h for the method and
// why).
#include "plumb/analysis/run_comparison.h"

#include <algorithm>
#include <cmath>
#include <random>

#include <fmt/format.h>

#include "plumb/core/errors.h"
#include "plumb/run/stats.h"

namespace plumb::analysis {
namespace {

// One run prepared for resampling: the sums of its n circular blocks of `block` samples, so a
// resampled mean costs n / block additions instead of n.
struct BlockedRun {
  std::vector<double> block_sums;  // block_sums[i] = x[i] + ... + x[i + block - 1] (mod n)
  size_t block = 1;
  size_t blocks_per_resample = 1;  // ceil(n / block)
  double units = 0;
};

BlockedRun blocked_run(const std::vector<double>& xs, double units) {
  BlockedRun run;
  const size_t n = xs.size();
  run.block = block_length(xs);
  run.blocks_per_resample = (n + run.block - 1) / run.block;
  run.units = units;
  run.block_sums.resize(n);
  double sum = 0;
  for (size_t j = 0; j < run.block; ++j) sum += xs[j % n];
  for (size_t i = 0; i < n; ++i) {
    run.block_sums[i] = sum;
    sum += xs[(i + run.block) % n] - xs[i];  // slide the window by one
  }
  return run;
}

// Draws an index in [0, n): mt19937_64 output is fixed by the standard (unlike
// std::uniform_int_distribution's mapping), so the intervals are the same on every platform.
// The modulo bias is below n / 2^64: negligible.
size_t draw(std::mt19937_64& rng, size_t n) {
  return static_cast<size_t>(rng() % n);
}

// Throughput of one bootstrap replicate of a side: its runs resampled (when there are
// several), each resampled run's mean by circular blocks, mean of the runs' throughputs.
double resampled_throughput(const std::vector<BlockedRun>& runs, std::mt19937_64& rng) {
  double total = 0;
  for (size_t r = 0; r < runs.size(); ++r) {
    const BlockedRun& run = runs.size() == 1 ? runs.front() : runs[draw(rng, runs.size())];
    double sum = 0;
    for (size_t k = 0; k < run.blocks_per_resample; ++k)
      sum += run.block_sums[draw(rng, run.block_sums.size())];
    const double mean = sum / static_cast<double>(run.blocks_per_resample * run.block);
    total += run.units / mean;
  }
  return total / static_cast<double>(runs.size());
}

// Why a side cannot be compared, or "" when it can.
// Why a side has no throughput ("" when it has one): no run, or a run without a sample or units.
std::string side_problem(const SideSamples& side, const char* name) {
  if (side.runs_step_s.empty()) return fmt::format("side {} has no successful run", name);
  PLUMB_ASSERT(side.runs_step_s.size() == side.units_per_step.size(), "one unit count per run");
  for (size_t r = 0; r < side.runs_step_s.size(); ++r) {
    if (side.runs_step_s[r].empty())
      return fmt::format("a run of side {} has no step-time sample", name);
    if (!(side.units_per_step[r] > 0))
      return fmt::format("a run of side {} has no units per step", name);
  }
  return "";
}

// Why a side's throughput has no interval ("" when it has one): a run of one sample has no
// spread to resample. Its throughput, and so the ratio, is still known.
std::string interval_problem(const SideSamples& side, const char* name) {
  for (const auto& samples : side.runs_step_s)
    if (samples.size() < 2)
      return fmt::format(
          "a run of side {} has {} step-time sample; at least 2 are needed for an interval", name,
          samples.size());
  return "";
}

struct SideFigures {
  double throughput = 0, cv = 0;
  size_t samples = 0, block = 0;
};

SideFigures side_figures(const SideSamples& side) {
  SideFigures f;
  std::vector<double> pooled;
  for (size_t r = 0; r < side.runs_step_s.size(); ++r) {
    const auto& xs = side.runs_step_s[r];
    f.throughput += side.units_per_step[r] / run::mean_of(xs);
    f.block = std::max(f.block, block_length(xs));
    pooled.insert(pooled.end(), xs.begin(), xs.end());
  }
  f.throughput /= static_cast<double>(side.runs_step_s.size());
  f.samples = pooled.size();
  f.cv = run::stddev_of(pooled) / run::mean_of(pooled);
  return f;
}

// Each run's throughput, as one replicate group (a side that brings no groups of its own).
std::vector<double> own_throughputs(const SideSamples& side) {
  std::vector<double> t;
  for (size_t r = 0; r < side.runs_step_s.size(); ++r)
    t.push_back(side.units_per_step[r] / run::mean_of(side.runs_step_s[r]));
  return t;
}

// What the interval knows about run-to-run noise, appended to the verdict's reason.
std::string between_run_text(const BetweenRunSpread& spread) {
  if (spread.dof == 0)
    return "between-run variation unknown (one run per side, no earlier runs of this setting)";
  return fmt::format("runs of this setting vary by {:.1f}% (SD, {} dof)", 100 * spread.sd,
                     spread.dof);
}

std::string verdict_reason(const ThroughputComparison& c, double tolerance) {
  const std::string interval = fmt::format("interval [{:.3f}, {:.3f}]", c.ci_low, c.ci_high);
  const double lower_bound = 1 / (1 + tolerance), upper_bound = 1 + tolerance;
  switch (c.verdict) {
    case Verdict::kSlower:
      return fmt::format("{} lies below {:.3f} (tolerance {:.1f}%)", interval, lower_bound,
                         100 * tolerance);
    case Verdict::kFaster:
      return fmt::format("{} lies above {:.3f} (tolerance {:.1f}%)", interval, upper_bound,
                         100 * tolerance);
    case Verdict::kNoSignificantDifference:
      if (c.ci_low > 1 || c.ci_high < 1)
        return fmt::format("{} excludes 1 but not the {:.1f}% tolerance band", interval,
                           100 * tolerance);
      return fmt::format("{} includes 1: the difference is within the noise", interval);
    case Verdict::kNotComparable:
      break;
  }
  return "";
}

// The log size a change must exceed to be called with kDetectionPower, for runs whose log
// throughput varies by `sd` (with `dof` degrees of freedom) and inverse_runs = 1/k_A + 1/k_B.
double detection_margin(double sd, double dof, double inverse_runs, const ComparisonOptions& o) {
  const double t_interval = run::t_critical(o.confidence, dof);
  const double t_power = run::t_critical(2 * kDetectionPower - 1, dof);  // one-sided quantile
  return std::log1p(o.tolerance) + (t_interval + t_power) * sd * std::sqrt(inverse_runs);
}

}  // namespace

Resolution resolution(const BetweenRunSpread& spread, size_t runs_a, size_t runs_b,
                      const ComparisonOptions& options) {
  Resolution r;
  if (spread.dof == 0 || !(spread.sd >= 0) || runs_a == 0 || runs_b == 0) return r;
  const double inverse_runs = 1.0 / static_cast<double>(runs_a) + 1.0 / static_cast<double>(runs_b);
  r.detectable_change = -std::expm1(
      -detection_margin(spread.sd, static_cast<double>(spread.dof), inverse_runs, options));
  // Degrees of freedom from earlier runs in the databases: they stay whatever k is; each side's
  // own k runs add k - 1.
  const double own_dof = static_cast<double>(runs_a - 1 + runs_b - 1);
  const double earlier_dof = std::max(0.0, static_cast<double>(spread.dof) - own_dof);
  const double wanted = -std::log1p(-options.detect);  // log size of the change to resolve
  for (size_t k = 1; k <= kMaxRunsPerSide; ++k) {
    const double dof = earlier_dof + 2.0 * static_cast<double>(k - 1);
    if (dof < 1) continue;
    if (detection_margin(spread.sd, dof, 2.0 / static_cast<double>(k), options) <= wanted) {
      r.runs_per_side_to_detect = k;
      break;
    }
  }
  return r;
}

BetweenRunSpread between_run_spread(const std::vector<std::vector<double>>& groups) {
  BetweenRunSpread spread;
  double squares = 0;
  for (const auto& group : groups) {
    if (group.size() < 2) continue;
    std::vector<double> logs;
    for (double t : group) logs.push_back(std::log(t));
    const double mean = run::mean_of(logs);
    for (double y : logs) squares += (y - mean) * (y - mean);
    spread.dof += group.size() - 1;
  }
  spread.sd =
      spread.dof == 0 ? run::Summary::kNaN : std::sqrt(squares / static_cast<double>(spread.dof));
  return spread;
}

void validate_comparison_options(const ComparisonOptions& o) {
  if (!(o.tolerance >= 0 && o.tolerance < 1))
    throw UsageError(
        fmt::format("--tolerance is a fraction in [0, 1), e.g. 0.02 for 2%; got {}", o.tolerance));
  if (!(o.confidence > 0 && o.confidence < 1))
    throw UsageError(
        fmt::format("--confidence is a fraction in (0, 1), e.g. 0.95; got {}", o.confidence));
  if (o.resamples < 100)
    throw UsageError(fmt::format("--resamples must be at least 100, got {}", o.resamples));
  // A change no larger than the tolerance band is never called, whatever the runs.
  const double smallest = -std::expm1(-std::log1p(o.tolerance));
  if (!(o.detect > smallest && o.detect < 1))
    throw UsageError(fmt::format(
        "--detect is the throughput change to size the runs for, a fraction in ({:.4f}, 1) "
        "(beyond the {:.1f}% tolerance band), e.g. 0.10 for 10%; got {}",
        smallest, 100 * o.tolerance, o.detect));
}

const char* verdict_name(Verdict verdict) {
  switch (verdict) {
    case Verdict::kFaster:
      return "faster";
    case Verdict::kSlower:
      return "slower";
    case Verdict::kNoSignificantDifference:
      return "no significant difference";
    case Verdict::kNotComparable:
      return "not comparable";
  }
  return "?";
}

size_t block_length(const std::vector<double>& xs) {
  const size_t n = xs.size();
  if (n < 4) return 1;
  const double mean = run::mean_of(xs);
  double variance_sum = 0;
  for (double x : xs) variance_sum += (x - mean) * (x - mean);
  const size_t max_lag = std::min<size_t>(n / 4, 200);
  // Politis & White: the first lag m after which K consecutive autocorrelations are all below
  // c * sqrt(log10(n) / n) (c = 2, K = max(5, sqrt(log10 n))).
  const double bound = 2 * std::sqrt(std::log10(static_cast<double>(n)) / static_cast<double>(n));
  const size_t run_needed =
      std::max<size_t>(5, static_cast<size_t>(std::sqrt(std::log10(static_cast<double>(n)))));
  size_t insignificant_run = 0, m = max_lag;
  if (variance_sum > 0) {
    for (size_t lag = 1; lag <= max_lag; ++lag) {
      double s = 0;
      for (size_t i = 0; i + lag < n; ++i) s += (xs[i] - mean) * (xs[i + lag] - mean);
      if (std::fabs(s / variance_sum) < bound) {
        if (++insignificant_run == run_needed) {
          m = lag - run_needed;  // the last significant lag
          break;
        }
      } else {
        insignificant_run = 0;
      }
    }
  } else {
    m = 0;  // constant samples: nothing to preserve
  }
  // The small offset keeps a perfect cube's root (cbrt(1000) = 10.000000000000002) exact.
  const size_t cube_root = static_cast<size_t>(std::ceil(std::cbrt(static_cast<double>(n)) - 1e-9));
  return std::clamp<size_t>(std::max(cube_root, 2 * m), 1, n / 2);
}

Verdict judge(double ci_low, double ci_high, double tolerance) {
  if (ci_high < 1 / (1 + tolerance)) return Verdict::kSlower;
  if (ci_low > 1 + tolerance) return Verdict::kFaster;
  return Verdict::kNoSignificantDifference;
}

ThroughputComparison compare_throughput(const SideSamples& a, const SideSamples& b,
                                        const ComparisonOptions& options) {
  ThroughputComparison c;
  c.runs_a = a.runs_step_s.size();
  c.runs_b = b.runs_step_s.size();
  const std::string problem =
      side_problem(a, "A").empty() ? side_problem(b, "B") : side_problem(a, "A");
  if (!problem.empty()) {
    c.throughput_a = c.throughput_b = c.ratio = c.ci_low = c.ci_high = run::Summary::kNaN;
    c.cv_a = c.cv_b = run::Summary::kNaN;
    c.verdict = Verdict::kNotComparable;
    c.reason = problem;
    return c;
  }
  const SideFigures fa = side_figures(a), fb = side_figures(b);
  c.throughput_a = fa.throughput;
  c.throughput_b = fb.throughput;
  c.ratio = fb.throughput / fa.throughput;
  c.samples_a = fa.samples;
  c.samples_b = fb.samples;
  c.cv_a = fa.cv;
  c.cv_b = fb.cv;
  c.block_a = fa.block;
  c.block_b = fb.block;
  const std::string no_interval =
      interval_problem(a, "A").empty() ? interval_problem(b, "B") : interval_problem(a, "A");
  if (!no_interval.empty()) {
    c.ci_low = c.ci_high = run::Summary::kNaN;
    c.verdict = Verdict::kNotComparable;
    c.reason = no_interval;
    return c;
  }

  std::vector<BlockedRun> runs_a, runs_b;
  for (size_t r = 0; r < a.runs_step_s.size(); ++r)
    runs_a.push_back(blocked_run(a.runs_step_s[r], a.units_per_step[r]));
  for (size_t r = 0; r < b.runs_step_s.size(); ++r)
    runs_b.push_back(blocked_run(b.runs_step_s[r], b.units_per_step[r]));
  std::mt19937_64 rng(options.seed);
  std::vector<double> ratios(options.resamples);
  for (double& ratio : ratios)
    ratio = resampled_throughput(runs_b, rng) / resampled_throughput(runs_a, rng);
  std::sort(ratios.begin(), ratios.end());
  const double alpha = 1 - options.confidence;
  c.ci_low = run::percentile_sorted(ratios, alpha / 2);
  c.ci_high = run::percentile_sorted(ratios, 1 - alpha / 2);

  // The between-run interval (see the top of run_comparison.h); the union keeps the wider.
  std::vector<std::vector<double>> groups;
  for (const SideSamples* side : {&a, &b}) {
    if (side->replicate_groups.empty())
      groups.push_back(own_throughputs(*side));
    else
      groups.insert(groups.end(), side->replicate_groups.begin(), side->replicate_groups.end());
  }
  c.between_runs = between_run_spread(groups);
  if (c.between_runs.dof > 0) {
    const double half =
        run::t_critical(options.confidence, static_cast<double>(c.between_runs.dof)) *
        c.between_runs.sd *
        std::sqrt(1.0 / static_cast<double>(c.runs_a) + 1.0 / static_cast<double>(c.runs_b));
    c.ci_low = std::min(c.ci_low, c.ratio * std::exp(-half));
    c.ci_high = std::max(c.ci_high, c.ratio * std::exp(half));
  }
  c.resolution = resolution(c.between_runs, c.runs_a, c.runs_b, options);
  c.verdict = judge(c.ci_low, c.ci_high, options.tolerance);
  c.reason = verdict_reason(c, options.tolerance) + "; " + between_run_text(c.between_runs);
  return c;
}

}  // namespace plumb::analysis
