// Benchmark: how much the operator observer slows a step. One process, one model, warmed up
// to steady state; then rounds of K plain steps and K observed steps, alternating which comes
// first, so drift in machine state hits both alike. Reports the median of the per-round
// ratios (observed / plain) and the means. Before the model it times a tiny operator in a
// loop with and without the observer: the cost per observed call, which times the number of
// calls a step makes explains the model's overhead.
//
// Usage: plumb_bench_observer_overhead WORKLOAD train|infer BATCH THREADS [ROUNDS] [STEPS]
#include <chrono>
#include <cstdio>
#include <string>
#include <utility>

#include <torch/torch.h>

#include "overhead_bench.h"
#include "plumb/profile/op_observer.h"
#include "plumb/run/heap_policy.h"
#include "plumb/run/stats.h"
#include "plumb/run/step_loop.h"

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
  const auto args = plumb::bench::parse_bench_args(argc, argv);
  if (!args) return 2;
  const plumb::Workload& w = *args->workload;
  const plumb::run::RunOptions& o = args->options;
  const int rounds = args->rounds, steps = args->steps;

  torch::set_num_threads(o.threads);
  const auto [call_plain, call_observed] = per_call_seconds();
  std::printf("tiny op: %.0f ns plain, %.0f ns observed: %+.0f ns per observed call\n",
              1e9 * call_plain, 1e9 * call_observed, 1e9 * (call_observed - call_plain));

  double calls_per_step = 0;
  plumb::bench::RoundTimes times;
  plumb::run::RunResult r;
  plumb::run::keep_freed_memory_in_process(r.warnings);  // as plumb profile measures
  plumb::run::with_model(w, o, r, [&](plumb::run::StepLoop& loop) {
    plumb::run::warm_up(loop, o, r, {});
    plumb::profile::OpObserver observer;
    times = plumb::bench::alternate(
        loop, rounds, steps, [&] { observer.attach(); }, [&] { observer.detach(); },
        [&] {
          calls_per_step = 0;
          for (const auto& op : observer.aggregate(steps)) calls_per_step += op.calls;
          observer.clear();  // keep its tables from growing across rounds
        });
  });
  if (r.status != plumb::run::RunStatus::kOk) {
    std::fprintf(stderr, "run failed: %s\n", r.message.c_str());
    return 1;
  }
  plumb::bench::print_rounds(args->label + " (observer)", times, steps);
  const double plain_mean = plumb::run::mean_of(times.plain);
  std::printf(
      "%.0f observed calls per step; x per-call cost = %.1f ms (%.1f%% of the plain step)\n",
      calls_per_step, 1e3 * calls_per_step * (call_observed - call_plain),
      100 * calls_per_step * (call_observed - call_plain) / plain_mean);
  return 0;
}
