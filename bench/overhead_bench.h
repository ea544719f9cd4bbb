// Shared by the overhead benchmarks (observer, memory tracker): the command line
// "WORKLOAD train|infer BATCH THREADS [ROUNDS] [STEPS]", and rounds of K plain steps and K
// steps with some tracking switched on, alternating which half comes first so that drift in
// machine state (frequency, other tenants) hits both alike. The median of the per-round ratios
// is the figure reported.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "plumb/platform/blas_check.h"
#include "plumb/run/stats.h"
#include "plumb/run/step_loop.h"
#include "plumb/workloads/all_workloads.h"

namespace plumb::bench {

struct BenchArgs {
  const Workload* workload = nullptr;
  run::RunOptions options;
  int rounds = 10;
  int steps = 3;
  std::string label;  // "resnet50 train batch 8 threads 2"
};

// Prints the usage and returns nullopt when arguments are missing. First runs the models' GEMMs
// on the kernels plumb itself runs them on (a restart, on a CPU OpenBLAS did not recognise).
inline std::optional<BenchArgs> parse_bench_args(int argc, char** argv) {
  const std::string restart =
      platform::restart_with_matching_openblas_kernels(platform::detect_blas(), argv);
  if (!restart.empty()) std::fprintf(stderr, "%s\n", restart.c_str());
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s WORKLOAD train|infer BATCH THREADS [ROUNDS=10] [STEPS=3]\n",
                 argv[0]);
    return std::nullopt;
  }
  BenchArgs a;
  a.workload = &workloads::default_registry().get(argv[1]);
  a.options.workload = argv[1];
  a.options.mode = parse_mode(argv[2]);
  a.options.config = a.workload->default_config();
  a.options.config.set_int("batch", std::atoll(argv[3]));
  a.options.threads = std::atoi(argv[4]);
  if (argc > 5) a.rounds = std::atoi(argv[5]);
  if (argc > 6) a.steps = std::atoi(argv[6]);
  a.label = std::string(argv[1]) + " " + argv[2] + " batch " + argv[3] + " threads " + argv[4];
  return a;
}

struct RoundTimes {
  std::vector<double> plain, tracked, ratios;  // seconds per step, per round
};

// `switch_on` / `switch_off` bracket the tracked half of each round; `after_round` runs after
// both halves (e.g. to read and clear what the tracking collected); `before_step(tracked)`
// before each step (as plumb profile tells its observer that a step begins).
inline RoundTimes alternate(run::StepLoop& loop, int rounds, int steps,
                            const std::function<void()>& switch_on,
                            const std::function<void()>& switch_off,
                            const std::function<void()>& after_round = {},
                            const std::function<void(bool)>& before_step = {}) {
  RoundTimes t;
  for (int round = 0; round < rounds; ++round) {
    double t_plain = 0, t_tracked = 0;
    for (int half = 0; half < 2; ++half) {
      const bool track = (half == 0) == (round % 2 == 1);
      if (track) switch_on();
      double sum = 0;
      for (int i = 0; i < steps; ++i) {
        if (before_step) before_step(track);
        sum += loop.step();
      }
      if (track) switch_off();
      (track ? t_tracked : t_plain) = sum / steps;
    }
    if (after_round) after_round();
    t.plain.push_back(t_plain);
    t.tracked.push_back(t_tracked);
    t.ratios.push_back(t_tracked / t_plain);
  }
  return t;
}

// "plain 12.34 ms, tracked 12.56 ms per step (...); overhead median +1.78% [round range ...];
// geometric mean +1.70% (95% CI ...)": the interval is Student's t over the rounds' log ratios,
// so a verdict against a target can say whether the rounds' spread allows one.
inline void print_rounds(const std::string& what, const RoundTimes& t, int steps) {
  const double median_ratio = run::median_of(t.ratios);
  std::vector<double> logs;
  for (double r : t.ratios) logs.push_back(std::log(r));
  const run::Summary log_summary = run::summarize(logs);
  const double half = log_summary.ci_half_width;  // NaN with one round
  std::printf(
      "%s: plain %.2f ms, tracked %.2f ms per step (means over %zu rounds x %d steps); "
      "overhead median %+.2f%% [round range %+.2f%% .. %+.2f%%]; geometric mean %+.2f%% "
      "(95%% CI %+.2f%% .. %+.2f%%)\n",
      what.c_str(), 1e3 * run::mean_of(t.plain), 1e3 * run::mean_of(t.tracked), t.ratios.size(),
      steps, 100 * (median_ratio - 1),
      100 * (*std::min_element(t.ratios.begin(), t.ratios.end()) - 1),
      100 * (*std::max_element(t.ratios.begin(), t.ratios.end()) - 1),
      100 * (std::exp(log_summary.mean) - 1), 100 * (std::exp(log_summary.mean - half) - 1),
      100 * (std::exp(log_summary.mean + half) - 1));
}

}  // namespace plumb::bench
