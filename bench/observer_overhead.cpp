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
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "overhead_bench.h"
#include "plumb/core/layer_scope.h"
#include "plumb/profile/op_graph.h"
#include "plumb/profile/op_observer.h"
#include "plumb/run/heap_policy.h"
#include "plumb/run/stats.h"
#include "plumb/run/step_loop.h"

namespace {

// A callback that asks LibTorch for what the observer asks (inputs and outputs, the same
// scopes) and does nothing with them: what RecordFunction and boxing cost on their own, apart
// from plumb's work in its callbacks. Without arguments it asks for neither: RecordFunction
// alone, so that the difference is what boxing the arguments costs.
std::unique_ptr<at::ObserverContext> null_start(const at::RecordFunction&) {
  return nullptr;
}
void null_end(const at::RecordFunction&, at::ObserverContext*) {}

class NullCallback {
 public:
  explicit NullCallback(bool arguments = true) : arguments_(arguments) {}
  void attach() {
    handle_ = at::addThreadLocalCallback(
        at::RecordFunctionCallback(&null_start, &null_end)
            .needsInputs(arguments_)
            .needsOutputs(arguments_)
            .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION,
                     at::RecordScope::USER_SCOPE}));
  }
  void detach() { at::removeCallback(handle_); }

 private:
  bool arguments_;
  at::CallbackHandle handle_ = 0;
};

// Seconds per call of `op`, plain and with `tracker` attached, best of rounds.
template <typename Tracker, typename Op>
std::pair<double, double> per_call_seconds(Tracker& tracker, Op op, int calls) {
  auto time_loop = [&] {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) op();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / calls;
  };
  double plain = 1e9, observed = 1e9;
  for (int round = 0; round < 5; ++round) {
    plain = std::min(plain, time_loop());
    tracker.attach();
    observed = std::min(observed, time_loop());
    tracker.detach();
    if constexpr (std::is_same_v<Tracker, plumb::profile::OpObserver>) tracker.clear();
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
  // A tiny add (two 4-element tensors), and a concatenation of 50 small tensors: an operator
  // whose inputs are a tensor list costs the observer more (each tensor is boxed, hashed and
  // described).
  const at::Tensor a = torch::ones({4}), b = torch::ones({4});
  std::vector<at::Tensor> parts(50, torch::ones({1, 4}));
  plumb::profile::OpObserver call_observer;
  NullCallback call_null;
  const auto report = [](const char* what, std::pair<double, double> observer,
                         std::pair<double, double> null) {
    std::printf(
        "%s: %.0f ns plain, %.0f ns observed (%+.0f ns per call; LibTorch's RecordFunction and "
        "boxing alone %+.0f ns)\n",
        what, 1e9 * observer.first, 1e9 * observer.second, 1e9 * (observer.second - observer.first),
        1e9 * (null.second - null.first));
  };
  const auto add_observed = per_call_seconds(
      call_observer, [&] { at::add(a, b); }, 200000);
  report("tiny op", add_observed,
         per_call_seconds(
             call_null, [&] { at::add(a, b); }, 200000));
  report("cat of 50 tensors",
         per_call_seconds(
             call_observer, [&] { at::cat(parts); }, 20000),
         per_call_seconds(
             call_null, [&] { at::cat(parts); }, 20000));
  // The add again inside a layer scope, as model code runs, on plain tensors and on one that
  // requires grad: then each call also creates an autograd node, whose sequence number the
  // observer maps to the layer (for the backward node that will run it).
  const at::Tensor g = torch::ones({4}, torch::requires_grad());
  for (const at::Tensor* x : {&a, &g}) {
    const auto scoped_add = [&] {
      plumb::LayerScope scope("layer");
      at::add(*x, b);
    };
    report(x == &a ? "tiny op in a layer" : "tiny op in a layer, creating an autograd node",
           per_call_seconds(call_observer, scoped_add, 200000),
           per_call_seconds(call_null, scoped_add, 200000));
  }
  const auto [call_plain, call_observed] = add_observed;

  double calls_per_step = 0;
  plumb::bench::RoundTimes times, capture, framework, bare;
  double build_s = 0;
  int builds = 0;
  size_t nodes = 0;
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
        },
        [&](bool tracked) {
          if (tracked) observer.begin_step();
        });
    NullCallback null_callback, bare_callback(false);
    framework = plumb::bench::alternate(
        loop, rounds, steps, [&] { null_callback.attach(); }, [&] { null_callback.detach(); });
    bare = plumb::bench::alternate(
        loop, rounds, steps, [&] { bare_callback.attach(); }, [&] { bare_callback.detach(); });
    // Graph capture on top of the attached observer, as the last step of a profile pass runs
    // it, and the graph built from what it captured (timed apart: it runs after the step).
    observer.attach();
    capture = plumb::bench::alternate(
        loop, rounds, steps, [&] { observer.capture_graph(true); },
        [&] {
          observer.capture_graph(false);
          const int64_t start = plumb::steady_now_ns();
          nodes = plumb::profile::build_step_graph(observer, start, 0).nodes.size();
          build_s += static_cast<double>(plumb::steady_now_ns() - start) * 1e-9;
          ++builds;
        },
        [&] { observer.clear(); }, [&](bool) { observer.begin_step(); });
    observer.detach();
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
  plumb::bench::print_rounds(
      args->label + " (a callback that does nothing: LibTorch's RecordFunction and boxing)",
      framework, steps);
  plumb::bench::print_rounds(
      args->label + " (the same callback asking for no arguments: RecordFunction without boxing)",
      bare, steps);
  plumb::bench::print_rounds(args->label + " (graph capture, observer attached in both halves)",
                             capture, steps);
  const double observed = plumb::run::mean_of(capture.plain);
  const double per_step = plumb::run::mean_of(capture.tracked) - observed;
  const double build = build_s / std::max(builds, 1) / steps;
  std::printf(
      "graph: %zu nodes per %d steps, built in %.1f ms per step; a profile pass captures one "
      "step: %+.1f ms = %+.1f%% of a 3-step observed pass (warm-up not counted)\n",
      nodes, steps, 1e3 * build, 1e3 * (per_step + build),
      100 * (per_step + build) / (3 * observed));
  return 0;
}
