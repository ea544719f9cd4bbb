// Synthetic step-time samples and stored runs for the plumb compare tests: a run with known
// mean, noise and environment is written straight into a store in microseconds, instead of
// measuring a workload for seconds.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "plumb/core/mode.h"
#include "plumb/platform/environment.h"
#include "plumb/run/run_result.h"
#include "plumb/store/results_store.h"

namespace plumb::testing {

// n step times around `mean_s` with coefficient of variation `cv` (normal noise, seeded).
inline std::vector<double> noisy_samples(double mean_s, double cv, size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0, cv * mean_s);
  std::vector<double> xs(n);
  for (double& x : xs) x = mean_s + noise(rng);
  return xs;
}

struct SyntheticRun {
  std::string workload = "fake/mlp";
  std::string mode = "train";
  int64_t batch = 8;
  int threads = 1;
  std::string tag;
  double mean_s = 0.010;
  double cv = 0.02;
  size_t n = 200;
  uint64_t seed = 1;
  std::string cpu_model = "Test CPU @ 2.0GHz";
  std::string libtorch_version = "1.13.1";
  double load_average = 0.1;
  std::string hidden = "16";  // a config key besides batch
  std::string warning;        // a noisy-machine warning of the environment ("" for none)
};

inline run::RunOptions synthetic_options(const SyntheticRun& s) {
  run::RunOptions o;
  o.workload = s.workload;
  o.mode = s.mode == "infer" ? Mode::kInfer : Mode::kTrain;
  o.config.add_int("batch", s.batch, "mini-batch size")
      .add_choice("hidden", s.hidden, {s.hidden}, "width");
  o.threads = s.threads;
  return o;
}

inline platform::Environment synthetic_environment(const SyntheticRun& s) {
  platform::Environment env;
  env.host = "testhost";
  env.cpu_model = s.cpu_model;
  env.logical_cores = 8;
  env.threads_used = s.threads;
  env.load_average_1m = s.load_average;
  env.libtorch_version = s.libtorch_version;
  env.blas = "libopenblas.so.0";
  env.blas_optimized = true;
  env.plumb_version = "0.1.0";
  env.git_commit = "abc123";
  env.device = "cpu";
  if (!s.warning.empty()) env.warnings.push_back(s.warning);
  return env;
}

// Stores one successful run; returns its id.
inline int64_t store_synthetic_run(store::ResultsStore& db, const SyntheticRun& s) {
  run::RunResult r;
  r.command = "plumb run " + s.workload;
  r.started_at = "2024-05-01T12:00:00Z";
  r.samples_s = noisy_samples(s.mean_s, s.cv, s.n, s.seed);
  r.warmup_s = {2 * s.mean_s};
  r.steady_detected = r.target_met = true;
  r.step_time = run::summarize(r.samples_s);
  r.units_per_step = static_cast<double>(s.batch);
  r.throughput_unit = "samples/s";
  r.throughput = r.units_per_step / r.step_time.mean;
  return db.save_run(synthetic_options(s), r, synthetic_environment(s), s.tag);
}

}  // namespace plumb::testing
