// Benchmark: how much the operator observer slows a step. One process, one model, warmed up
// to steady state; then rounds of K plain steps and K observed steps, alternating which comes
// first, so drift in machine state hits both alike. Reports the median of the per-round
// ratios (observed / plain) and the means.
//
// Usage: plumb_bench_observer_overhead WORKLOAD train|infer BATCH THREADS [ROUNDS] [STEPS]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "plumb/profile/op_observer.h"
#include "plumb/run/stats.h"
#include "plumb/run/step_loop.h"
#include "plumb/workloads/all_workloads.h"

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s WORKLOAD train|infer BATCH THREADS [ROUNDS=10] [STEPS=3]\n",
                 argv[0]);
    return 2;
  }
  const auto& w = plumb::workloads::default_registry().get(argv[1]);
  plumb::run::RunOptions o;
  o.workload = argv[1];
  o.mode = plumb::parse_mode(argv[2]);
  o.config = w.default_config();
  o.config.set_int("batch", std::atoll(argv[3]));
  o.threads = std::atoi(argv[4]);
  const int rounds = argc > 5 ? std::atoi(argv[5]) : 10;
  const int steps = argc > 6 ? std::atoi(argv[6]) : 3;

  std::vector<double> plain, observed, ratios;
  plumb::run::RunResult r;
  plumb::run::with_model(w, o, r, [&](plumb::run::StepLoop& loop) {
    plumb::run::warm_up(loop, o, r, {});
    plumb::profile::OpObserver observer;
    for (int round = 0; round < rounds; ++round) {
      double t_plain = 0, t_observed = 0;
      for (int half = 0; half < 2; ++half) {
        const bool observe = (half == 0) == (round % 2 == 1);
        if (observe) observer.attach();
        double sum = 0;
        for (int i = 0; i < steps; ++i) sum += loop.step();
        if (observe) observer.detach();
        (observe ? t_observed : t_plain) = sum / steps;
      }
      observer.clear();  // keep its tables from growing across rounds
      plain.push_back(t_plain);
      observed.push_back(t_observed);
      ratios.push_back(t_observed / t_plain);
    }
  });
  if (r.status != plumb::run::RunStatus::kOk) {
    std::fprintf(stderr, "run failed: %s\n", r.message.c_str());
    return 1;
  }
  const double median_ratio = plumb::run::median_of(ratios);
  std::printf(
      "%s %s batch %s threads %d: plain %.2f ms, observed %.2f ms per step (means over %d "
      "rounds x %d steps); overhead median %+.2f%% [round range %+.2f%% .. %+.2f%%]\n",
      argv[1], argv[2], argv[3], o.threads, 1e3 * plumb::run::mean_of(plain),
      1e3 * plumb::run::mean_of(observed), rounds, steps, 100 * (median_ratio - 1),
      100 * (*std::min_element(ratios.begin(), ratios.end()) - 1),
      100 * (*std::max_element(ratios.begin(), ratios.end()) - 1));
  return 0;
}
