// Linear-regression sensitivity of a sweep metric to its hyperparameters (ParaDnn, MLSys 2020,
// Sec. 2.3 and 4.1: weights of standardized hyperparameters, with their signs). The least-squares
// solve is LibTorch's linalg_lstsq in double; this file only builds the design matrix and reads
// the answer. Rules in sweep_analysis.h.
#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <torch/torch.h>

#include "plumb/analysis/input_checks.h"
#include "plumb/analysis/sweep_analysis.h"
#include "plumb/analysis/sweep_inputs.h"
#include "plumb/core/errors.h"
#include "plumb/run/stats.h"

namespace plumb::analysis {
namespace {

// Relative singular-value cutoff for the rank of the standardized design matrix. Its columns
// have unit scale, so a dependent column shows up near machine precision; 1e-9 stays far above
// rounding noise and far below any real sweep's smallest singular value.
constexpr double kRankRcond = 1e-9;

// Population (divisor n) standard deviation: the standardization divides by it so each input
// has unit variance over exactly the fitted points. `mean` from run::mean_of, which returns a
// constant series' value exactly, so a constant input gives exactly 0.
double population_stddev(const std::vector<double>& xs, double mean) {
  double sq = 0;
  for (double x : xs) sq += (x - mean) * (x - mean);
  return std::sqrt(sq / static_cast<double>(xs.size()));
}

// Rank of `design` ([n, p], double) as linalg_lstsq's gelsy driver finds it. gelsy is the
// LAPACK driver that reports rank on CPU; a CUDA build still solves on CPU tensors here.
int64_t design_rank(const torch::Tensor& design) {
  const torch::Tensor rhs = torch::zeros({design.size(0), 1}, design.options());
  const auto result = torch::linalg_lstsq(design, rhs, kRankRcond, "gelsy");
  return std::get<2>(result).item<int64_t>();
}

// Names the first key whose column is a linear combination of the intercept and the columns
// before it (a sweep that moved two parameters together, e.g. nodes = 2 * input).
std::string dependent_key(const torch::Tensor& design, const std::vector<std::string>& keys) {
  for (size_t k = 0; k < keys.size(); ++k) {
    const int64_t cols = static_cast<int64_t>(k) + 2;  // intercept + keys[0..k]
    if (design_rank(design.narrow(1, 0, cols)) < cols) return keys[k];
  }
  return keys.back();
}

}  // namespace

Sensitivity sensitivity(const std::vector<SweepPoint>& points, const std::vector<std::string>& keys,
                        const std::string& metric, bool log_inputs) {
  sweep::require_points(points, "sweep points");
  sweep::require_metric(points, metric, "sweep points");

  Sensitivity out;
  out.metric = metric;
  out.log_inputs = log_inputs;

  // Failed runs carry no metric; the fit (and the standardization) use the others only.
  std::vector<SweepPoint> fitted;
  for (const SweepPoint& p : points) {
    if (sweep::finite_metric(p, metric)) {
      fitted.push_back(p);
    } else {
      ++out.n_failed;
    }
  }
  if (fitted.empty()) {
    throw UsageError("no point has a finite '" + metric + "' (" + std::to_string(out.n_failed) +
                     " failed); nothing to fit");
  }

  std::vector<std::string> inputs = keys;
  if (inputs.empty()) {
    const std::set<std::string> varying = sweep::varying_params(fitted);
    if (varying.empty()) {
      throw UsageError("no parameter varies among the " + std::to_string(fitted.size()) +
                       " points with '" + metric + "'; sensitivity needs a sweep");
    }
    inputs.assign(varying.begin(), varying.end());
  }
  const std::set<std::string> unique(inputs.begin(), inputs.end());
  if (unique.size() != inputs.size()) {
    throw UsageError("a sensitivity key is listed twice; give each parameter once");
  }
  for (const std::string& key : inputs) {
    sweep::require_param_everywhere(fitted, key, "points with '" + metric + "'");
  }
  const size_t n = fitted.size();
  const size_t p = inputs.size();
  if (n < p + 1) {
    throw UsageError("sensitivity of '" + metric + "' to " + std::to_string(p) +
                     " parameters needs at least " + std::to_string(p + 1) +
                     " points with the metric, got " + std::to_string(n) +
                     "; sweep more points or pass fewer keys");
  }

  // Design matrix [n, 1 + p]: a column of ones (intercept), then each standardized input.
  torch::Tensor design =
      torch::ones({static_cast<int64_t>(n), static_cast<int64_t>(p + 1)}, torch::kFloat64);
  auto design_a = design.accessor<double, 2>();
  for (size_t k = 0; k < p; ++k) {
    const std::string& key = inputs[k];
    std::vector<double> column(n);
    for (size_t i = 0; i < n; ++i) {
      const double value = fitted[i].params.at(key);
      if (log_inputs && !(value > 0)) {
        throw UsageError("parameter '" + key + "' has value " + number_text(value) +
                         ", which has no log2; pass log_inputs=false or drop this key");
      }
      column[i] = log_inputs ? std::log2(value) : value;
    }
    KeyWeight w;
    w.key = key;
    w.input_mean = run::mean_of(column);
    w.input_stddev = population_stddev(column, w.input_mean);
    if (!(w.input_stddev > 0)) {
      throw UsageError("parameter '" + key + "' is constant (" +
                       number_text(fitted.front().params.at(key)) + ") over the " +
                       std::to_string(n) +
                       " fitted points, so it cannot be standardized; drop it from the keys");
    }
    for (size_t i = 0; i < n; ++i) {
      design_a[static_cast<int64_t>(i)][static_cast<int64_t>(k + 1)] =
          (column[i] - w.input_mean) / w.input_stddev;
    }
    out.weights.push_back(w);
  }

  std::vector<double> y(n);
  for (size_t i = 0; i < n; ++i) y[i] = fitted[i].metrics.at(metric);
  out.n = n;
  out.metric_mean = run::mean_of(y);
  out.metric_stddev = population_stddev(y, out.metric_mean);

  // Collinear inputs have no unique weights; least squares would return an arbitrary split.
  if (design_rank(design) < static_cast<int64_t>(p + 1)) {
    throw UsageError("parameter '" + dependent_key(design, inputs) +
                     "' moves in lockstep with the other keys in this sweep (a linear "
                     "combination of them), so its weight is not defined; drop it from the keys");
  }

  const torch::Tensor target =
      torch::tensor(y, torch::kFloat64).reshape({static_cast<int64_t>(n), 1});      // [n, 1]
  const torch::Tensor solution = std::get<0>(torch::linalg_lstsq(design, target));  // [p+1, 1]
  const torch::Tensor predicted = torch::matmul(design, solution);                  // [n, 1]
  const double ss_res = (target - predicted).pow(2).sum().item<double>();
  const double ss_tot = (target - out.metric_mean).pow(2).sum().item<double>();

  auto sol = solution.accessor<double, 2>();
  out.intercept = sol[0][0];
  for (size_t k = 0; k < p; ++k) out.weights[k].weight = sol[static_cast<int64_t>(k + 1)][0];
  // A constant metric leaves nothing to explain: R^2 is undefined, not 1 or 0. Tested on the
  // values, not on ss_tot, which rounding can leave a hair above 0.
  const bool constant = std::all_of(y.begin(), y.end(), [&](double v) { return v == y.front(); });
  out.r_squared = constant ? kSweepNaN : 1.0 - ss_res / ss_tot;

  std::stable_sort(out.weights.begin(), out.weights.end(),
                   [](const KeyWeight& a, const KeyWeight& b) {
                     if (std::abs(a.weight) != std::abs(b.weight)) {
                       return std::abs(a.weight) > std::abs(b.weight);
                     }
                     return a.key < b.key;
                   });
  return out;
}

}  // namespace plumb::analysis
