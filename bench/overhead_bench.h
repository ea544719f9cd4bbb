// Shared by the overhead benchmarks (observer, memory tracker): the command line
// "WORKLOAD train|infer BATCH THREADS [ROUNDS] [STEPS]", and rounds of K plain steps and K
// steps under each kind of tracking, in a rotating order so that drift in machine state
// (frequency, other tenants) hits all alike. The per-round ratios are summarised.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <utility>
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

// One kind of tracking to time against plain steps: `switch_on` / `switch_off` bracket its K
// steps; `before_step` runs before each of them (as plumb profile tells its observer that a step
// begins); `after_round` after each round (e.g. to read and clear what the tracking collected).
struct Tracking {
  Tracking(std::function<void()> on, std::function<void()> off, std::function<void()> after = {},
           std::function<void()> before = {})
      : switch_on(std::move(on)),
        switch_off(std::move(off)),
        after_round(std::move(after)),
        before_step(std::move(before)) {}
  std::function<void()> switch_on, switch_off, after_round, before_step;
};

// Rounds of K plain steps and K steps under each tracking, in an order that rotates from round
// to round, so that drift in machine state (frequency, other tenants) hits every condition
// alike. Each tracking's ratios are to the plain steps of the same round: conditions compared
// in one run, minutes apart, can differ by more than what they measure.
inline std::vector<RoundTimes> interleave(run::StepLoop& loop, int rounds, int steps,
                                          const std::vector<Tracking>& trackings) {
  const size_t conditions = trackings.size() + 1;  // 0: plain
  std::vector<RoundTimes> out(trackings.size());
  std::vector<double> mean(conditions);
  for (int round = 0; round < rounds; ++round) {
    for (size_t k = 0; k < conditions; ++k) {
      const size_t c = (k + static_cast<size_t>(round)) % conditions;
      const Tracking* t = c == 0 ? nullptr : &trackings[c - 1];
      if (t != nullptr && t->switch_on) t->switch_on();
      double sum = 0;
      for (int i = 0; i < steps; ++i) {
        if (t != nullptr && t->before_step) t->before_step();
        sum += loop.step();
      }
      if (t != nullptr && t->switch_off) t->switch_off();
      mean[c] = sum / steps;
    }
    for (size_t c = 1; c < conditions; ++c) {
      if (trackings[c - 1].after_round) trackings[c - 1].after_round();
      out[c - 1].plain.push_back(mean[0]);
      out[c - 1].tracked.push_back(mean[c]);
      out[c - 1].ratios.push_back(mean[c] / mean[0]);
    }
  }
  return out;
}

// One tracking against plain steps, the halves of a round alternating which comes first.
inline RoundTimes alternate(run::StepLoop& loop, int rounds, int steps, Tracking tracking) {
  return interleave(loop, rounds, steps, {std::move(tracking)}).front();
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
