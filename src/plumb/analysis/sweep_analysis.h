// Analyses of ParaDnn-style hyperparameter sweeps (ParaDnn, MLSys 2020, Sec. 2.3): heat maps
// of a metric over two hyperparameters with the others fixed, linear-regression sensitivity
// of a metric to standardized hyperparameters, box-plot statistics per model type, and the
// speedup of one platform / library version / precision over another with its own
// sensitivity. Pure functions over finished sweep points; the results are plain structs so
// the CLI and the report can print tables and JSON from them.
//
// Conventions shared by every function here:
// - Parameter values are compared exactly (==): they come from configs, not measurements.
// - A point whose metric is missing or not finite (a failed run: out of memory, NaN loss) is
//   not an error: it is left out of the statistics and counted, so a sweep with failures
//   still gives an answer (ParaDnn's white out-of-memory squares).
// - A metric that no point has at all is a UsageError naming the metrics that exist; so is an
//   empty point list.
// - Undefined numbers are NaN (JSON null via json_number), never a made-up 0.
#pragma once

#include <cstddef>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace plumb::analysis {

// One finished sweep point: its hyperparameters (numeric) and measured metrics.
struct SweepPoint {
  // e.g. {"layers": 4, "nodes": 512, "batch": 64}
  std::map<std::string, double> params;
  // e.g. {"examples_per_s": 1234.5, "flops_per_s": ..., "flop_utilization": 0.31}
  std::map<std::string, double> metrics;
  // model type or tag, e.g. "paradnn_fc" (box plots per group)
  std::string group;
};

inline constexpr double kSweepNaN = std::numeric_limits<double>::quiet_NaN();

// ---------------------------------------------------------------------------------------------
// Heat map (ParaDnn Fig. 2, 7)

struct HeatMap {
  std::string x_key, y_key, metric;
  std::string group;                        // the one group the points belong to
  std::map<std::string, double> fixed;      // every other parameter's value in this map
  std::vector<double> xs, ys;               // distinct values, ascending
  std::vector<std::vector<double>> values;  // [y][x]: mean metric of the cell; NaN if none
  std::vector<std::vector<size_t>> counts;  // [y][x]: points averaged into the cell
  size_t n_points = 0;                      // points with a finite metric in the map
  size_t n_failed = 0;                      // points in the map without a finite metric
};

// The metric over x_key (columns) and y_key (rows) with every other parameter held at one
// value. `fixed` gives those values: every parameter that varies among `points` (a different
// value, or present in some points only) other than x_key and y_key must appear in it; a fixed
// parameter that does not vary may be given too (it must then equal its one value).
// Axes hold the x / y values of every point that matches `fixed`, also of failed points, so a
// failed run shows as an empty (NaN) cell rather than a missing row. Several points in one
// cell (repeated runs) are averaged (arithmetic mean) and counted.
// Throws UsageError when: points is empty; the points span several groups (filter to one
// model type first: averaging across model types means nothing); x_key or y_key is not a
// parameter of every point, or x_key == y_key; the metric is unknown; a varying parameter is
// not fixed (the message lists its values); a fixed key is not a parameter, is x_key / y_key,
// or its value is not one the points have (the message lists them); no point matches.
HeatMap heat_map(const std::vector<SweepPoint>& points, const std::string& x_key,
                 const std::string& y_key, const std::string& metric,
                 const std::map<std::string, double>& fixed = {});

// Heat maps for everything that is not fixed (small multiples): one per group and per
// combination of values of the parameters that vary among that group's points and are neither
// axes nor in `fixed`, in group order and ascending values. With nothing left unfixed this is
// exactly heat_map(). The same UsageErrors as heat_map() for bad axes, metric or fixed values.
std::vector<HeatMap> heat_maps(const std::vector<SweepPoint>& points, const std::string& x_key,
                               const std::string& y_key, const std::string& metric,
                               const std::map<std::string, double>& fixed = {});

// ---------------------------------------------------------------------------------------------
// Linear-regression sensitivity (ParaDnn Sec. 2.3, 4.1; Fig. 2(d)-(f), 8(a), 9(a))

struct KeyWeight {
  std::string key;
  double weight = kSweepNaN;        // metric units per one standard deviation of the input
  double input_mean = kSweepNaN;    // mean of the input (of log2(value) when log_inputs)
  double input_stddev = kSweepNaN;  // its population standard deviation (divisor n)
};

struct Sensitivity {
  std::string metric;
  bool log_inputs = false;
  std::vector<KeyWeight> weights;  // sorted by |weight| descending, ties by key
  double intercept = kSweepNaN;    // == mean metric, since the inputs are centered
  double r_squared = kSweepNaN;    // 1 - SS_res / SS_tot; NaN when the metric is constant
  size_t n = 0;                    // points in the fit
  size_t n_failed = 0;             // points left out: no finite metric
  double metric_mean = kSweepNaN;
  double metric_stddev = kSweepNaN;  // population; weight / metric_stddev = standardized beta
};

// Fits metric = intercept + sum_k weight_k * z_k by ordinary least squares (LibTorch
// linalg_lstsq in double), where z_k is hyperparameter k standardized to zero mean and unit
// population variance over the fitted points (after log2 when log_inputs). Standardizing the
// inputs is what ParaDnn means by "we normalize weights to the same scale, so that weight
// reflects importance": each weight is the change in the metric for a one-standard-deviation
// change of that hyperparameter, with its sign. The metric itself is NOT standardized or
// log-transformed: ParaDnn writes the model as "FLOPS = w0 x layer + ... + w4 x batch size",
// the metric in its own units, and comparing keys within one fit needs only the inputs on one
// scale. Weights therefore read in metric units; metric_stddev is reported so a caller can
// divide to get standardized betas (comparable across metrics). log_inputs suits ParaDnn
// sweeps, whose hyperparameters step in powers of two.
// keys: the inputs; empty = every parameter that varies among the points with a finite metric.
// The fit is descriptive, not a predictor (ParaDnn: "this LR model is not for prediction");
// r_squared says how much of the metric a linear model in the inputs explains.
// Throws UsageError when: points is empty; the metric is unknown; a key is not a parameter of
// every fitted point (names the known parameters); a key is constant over the fitted points
// (cannot be standardized; names the key and its value); no parameter varies (keys empty); a
// value is <= 0 with log_inputs; there are fewer fitted points than keys + 1; a key is a linear
// combination of the others in this sweep (its weight would not be defined; names it).
Sensitivity sensitivity(const std::vector<SweepPoint>& points, const std::vector<std::string>& keys,
                        const std::string& metric, bool log_inputs);

// ---------------------------------------------------------------------------------------------
// Box plots (ParaDnn Fig. 11, 12)

struct BoxStats {
  std::string group;
  size_t n = 0;         // points with a finite metric
  size_t n_failed = 0;  // points of the group without a finite metric
  double min = kSweepNaN, p2 = kSweepNaN, p9 = kSweepNaN, p50 = kSweepNaN, p91 = kSweepNaN,
         p98 = kSweepNaN, max = kSweepNaN, mean = kSweepNaN;
  std::vector<double> outliers;  // values below p2 or above p98 (ParaDnn draws them as dots)
};

// ParaDnn's box plot per group: box from the 9th to the 91st percentile, median bar, whiskers at
// the 2nd and 98th percentiles, outliers beyond them. Percentiles interpolate linearly between
// order statistics at rank q * (n - 1) (0-based; numpy's default "linear" method, as in
// plumb::run::percentile_sorted), so p0 = min and p100 = max. Groups appear in the order of
// their first point; a group with no finite metric has n = 0 and NaN statistics.
// Throws UsageError for an empty point list or an unknown metric.
std::vector<BoxStats> box_plots(const std::vector<SweepPoint>& points, const std::string& metric);

// ---------------------------------------------------------------------------------------------
// Speedup of B over A (ParaDnn Sec. 5, 6; Fig. 8, 9, 11, 12)

struct SpeedupPoint {
  std::string group;
  std::map<std::string, double> params;  // the matched values (the keys, or every parameter)
  double a = kSweepNaN, b = kSweepNaN;   // metric on each side (mean of repeated points)
  size_t a_count = 0, b_count = 0;       // points averaged on each side
  double ratio = kSweepNaN;              // b / a
};

struct Speedup {
  std::string metric;
  std::vector<std::string> keys;            // matched on group + these; empty = every parameter
  std::vector<SpeedupPoint> points;         // matched, in order of first appearance in A
  size_t unmatched_a = 0, unmatched_b = 0;  // usable settings with no partner on the other side
  size_t failed_a = 0, failed_b = 0;        // points left out: metric missing, not finite or <= 0
  double geomean = kSweepNaN;               // geometric mean of the ratios; NaN when none matched
  std::optional<Sensitivity> sensitivity;   // of "speedup" (= ratio); absent when unfittable
  std::vector<std::string> notes;           // averaging, failures, why no sensitivity
};

// Speedup of B over A, ratio = metric_b / metric_a (so > 1 means B is faster for a throughput
// metric; pass a time metric and it is the inverse). Points match when they have the same
// group and equal values of `keys`; with keys empty, equal full parameter maps. Several points
// of one side with the same match key (repeated runs, or settings that differ only in a
// parameter outside `keys`) are averaged (arithmetic mean) first, and a note says so. A point
// whose metric is missing, not finite or <= 0 cannot form a ratio: it is dropped and counted.
// The geometric mean is the right average of ratios (ParaDnn compares platforms by speedup
// ratios; the arithmetic mean of ratios depends on which side is the baseline).
// The sensitivity is sensitivity() of the ratio over the matched points (metric "speedup",
// inputs = the match keys that vary, log_inputs as given); when it cannot be fitted (too few
// matches, nothing varies) it is absent and a note gives the reason.
// Throws UsageError when: either side is empty; the metric is unknown on either side; a key is
// not a parameter of every point (names the known parameters).
Speedup speedup(const std::vector<SweepPoint>& points_a, const std::vector<SweepPoint>& points_b,
                const std::string& metric, const std::vector<std::string>& keys = {},
                bool log_inputs = true);

}  // namespace plumb::analysis
