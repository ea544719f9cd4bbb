// Benchmark: how much the operator observer slows a step. One process, one model, warmed up
// to steady state; then rounds of K plain steps and K observed steps, alternating which comes
// first, so drift in machine state hits both alike. Reports the median of the per-round
// ratios (observed / plain) and the means. Before the model it times a tiny operator in a
// loop with and without the observer: the cost per observed call, which times the number of
// calls a step makes explains the model's overhead.
//
// Usage: plumb_bench_observer_overhead WORKLOAD train|infer BATCH THREADS [ROUNDS] [STEPS]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "plumb/profile/op_observer.h"
#include "plumb/run/stats.h"
#include "plumb/run/step_loop.h"
#include "plumb/workloads/all_workloads.h"

namespace {

// Seconds per call of a tiny add (two 4-element tensors), plain and observed, best of rounds.
std::pair<double, double> per_call_seconds() {
  const at::Tensor a = torch::ones({4}), b = torch::ones({4});
  constexpr int kCalls = 200000;
  auto time_loop = [&] {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kCalls; ++i) at::add(a, b);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / kCalls;
  };
  double plain = 1e9, observed = 1e9;
  plumb::profile::OpObserver observer;
  for (int round = 0; round < 5; ++round) {
    plain = std::min(plain, time_loop());
    observer.attach();
    observed = std::min(observed, time_loop());
    observer.detach();
    observer.clear();
  }
  return {plain, observed};
}

}  // namespace

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

  torch::set_num_threads(o.threads);
  const auto [call_plain, call_observed] = per_call_seconds();
  std::printf("tiny op: %.0f ns plain, %.0f ns observed: %+.0f ns per observed call\n",
              1e9 * call_plain, 1e9 * call_observed, 1e9 * (call_observed - call_plain));

  std::vector<double> plain, observed, ratios;
  double calls_per_step = 0;
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
      calls_per_step = 0;
      for (const auto& op : observer.aggregate(steps)) calls_per_step += op.calls;
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
  std::printf(
      "%.0f observed calls per step; x per-call cost = %.1f ms (%.1f%% of the plain step)\n",
      calls_per_step, 1e3 * calls_per_step * (call_observed - call_plain),
      100 * calls_per_step * (call_observed - call_plain) / plumb::run::mean_of(plain));
  return 0;
}
