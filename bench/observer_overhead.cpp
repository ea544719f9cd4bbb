// Benchmark: how much the operator observer slows a step. One process, one model, warmed up
// to steady state; then rounds of K plain steps and K observed steps, alternating which comes
// first, so drift in machine state hits both alike. The observed half starts, as plumb profile
// does, with one untimed step that learns the calls; the learning step's own cost is reported
// apart. Reports the median of the per-round
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

template <typename Op>
double seconds_per_call(Op op, int calls) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) op();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / calls;
}

// Seconds per call of `op`, plain and with `tracker` attached, best of rounds.
template <typename Tracker, typename Op>
std::pair<double, double> per_call_seconds(Tracker& tracker, Op op, int calls) {
  double plain = 1e9, observed = 1e9;
  for (int round = 0; round < 5; ++round) {
    plain = std::min(plain, seconds_per_call(op, calls));
    tracker.attach();
    observed = std::min(observed, seconds_per_call(op, calls));
    tracker.detach();
    if constexpr (std::is_same_v<Tracker, plumb::profile::OpObserver>) tracker.clear();
  }
  return {plain, observed};
}

// The same with the observer replaying: one untimed "step" of `calls` calls learns them, and
// the timed step repeats them, as a profile pass's kept steps do.
template <typename Op>
std::pair<double, double> replayed_per_call_seconds(Op op, int calls) {
  plumb::profile::OpObserver observer;
  observer.allow_replay(true);
  double plain = 1e9, observed = 1e9;
  for (int round = 0; round < 5; ++round) {
    plain = std::min(plain, seconds_per_call(op, calls));
    observer.attach();
    observer.begin_step();
    seconds_per_call(op, calls);
    observer.end_step();
    observer.begin_step();
    observed = std::min(observed, seconds_per_call(op, calls));
    const bool replayed = observer.end_step() && observer.replayed_steps() == round + 1;
    observer.detach();
    observer.clear();
    if (!replayed) std::fprintf(stderr, "the per-call loop did not replay\n");
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
                         std::pair<double, double> null,
                         const char* null_what = "RecordFunction and boxing") {
    std::printf(
        "%s: %.0f ns plain, %.0f ns observed (%+.0f ns per call; LibTorch's %s alone %+.0f "
        "ns)\n",
        what, 1e9 * observer.first, 1e9 * observer.second, 1e9 * (observer.second - observer.first),
        null_what, 1e9 * (null.second - null.first));
  };
  const auto add_observed = per_call_seconds(
      call_observer, [&] { at::add(a, b); }, 200000);
  report("tiny op", add_observed,
         per_call_seconds(
             call_null, [&] { at::add(a, b); }, 200000));
  NullCallback call_bare(false);
  report("tiny op, replaying the learned calls (no arguments boxed)",
         replayed_per_call_seconds([&] { at::add(a, b); }, 200000),
         per_call_seconds(
             call_bare, [&] { at::add(a, b); }, 200000),
         "RecordFunction without boxing");
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
  std::vector<plumb::bench::RoundTimes> times;
  double build_s = 0, learning_s = 0;
  int builds = 0, learning_steps = 0, replayed = 0, dropped = 0;
  size_t nodes = 0;
  plumb::run::RunResult r;
  plumb::run::keep_freed_memory_in_process(r.warnings);  // as plumb profile measures
  plumb::run::with_model(w, o, r, [&](plumb::run::StepLoop& loop) {
    plumb::run::warm_up(loop, o, r, {});
    // As plumb profile observes: one step that learns the calls (not timed with the others),
    // then the timed steps, which replay them when the batches' shapes repeat.
    plumb::profile::OpObserver observer, boxing;
    observer.allow_replay(loop.batches_share_shapes());
    NullCallback null_callback, bare_callback(false);
    const plumb::bench::Tracking replaying{
        [&] {
          observer.attach();
          observer.begin_step();
          learning_s += loop.step();
          ++learning_steps;
          observer.end_step();
          observer.discard_counts();
        },
        [&] { observer.detach(); },
        [&] {
          calls_per_step = 0;
          for (const auto& op : observer.aggregate(steps)) calls_per_step += op.calls;
          observer.clear();  // keep its tables from growing across rounds
        },
        [&] { observer.begin_step(); }};
    // The observer boxing every call's inputs (no replay), on its own and capturing the graph,
    // as a profile pass's learning step runs it; the graph is built after the step, timed apart.
    const plumb::bench::Tracking boxed{[&] { boxing.attach(); }, [&] { boxing.detach(); },
                                       [&] { boxing.clear(); }, [&] { boxing.begin_step(); }};
    const plumb::bench::Tracking capturing{
        [&] {
          boxing.attach();
          boxing.capture_graph(true);
        },
        [&] {
          boxing.capture_graph(false);
          const int64_t start = plumb::steady_now_ns();
          nodes = plumb::profile::build_step_graph(boxing, start, 0).nodes.size();
          build_s += static_cast<double>(plumb::steady_now_ns() - start) * 1e-9;
          ++builds;
          boxing.detach();
        },
        [&] { boxing.clear(); }, [&] { boxing.begin_step(); }};
    times = plumb::bench::interleave(
        loop, rounds, steps,
        {replaying,
         boxed,
         capturing,
         {[&] { null_callback.attach(); }, [&] { null_callback.detach(); }},
         {[&] { bare_callback.attach(); }, [&] { bare_callback.detach(); }}});
    replayed = observer.replayed_steps();
    dropped = observer.dropped_steps();
  });
  if (r.status != plumb::run::RunStatus::kOk) {
    std::fprintf(stderr, "run failed: %s\n", r.message.c_str());
    return 1;
  }
  const auto& replay = times[0];
  const auto& boxed = times[1];
  const auto& capture = times[2];
  plumb::bench::print_rounds(args->label + " (observer, as plumb profile runs it)", replay, steps);
  const double plain_mean = plumb::run::mean_of(replay.plain);
  // The learning step is part of a profile pass's wall time, though not of the steps it keeps.
  const double learning_mean = learning_s / std::max(learning_steps, 1);
  std::printf(
      "timed observed steps: %d replayed the learned calls, %d did not repeat them (dropped); "
      "the untimed learning step before each round's: %.2f ms (%+.1f%% over a plain step)\n",
      replayed, dropped, 1e3 * learning_mean, 100 * (learning_mean / plain_mean - 1));
  plumb::bench::print_rounds(args->label + " (observer boxing every call's inputs: no replay)",
                             boxed, steps);
  std::printf(
      "%.0f observed calls per step; x the tiny op's per-call cost with arguments boxed = %.1f ms "
      "(%.1f%% of the plain step)\n",
      calls_per_step, 1e3 * calls_per_step * (call_observed - call_plain),
      100 * calls_per_step * (call_observed - call_plain) / plain_mean);
  plumb::bench::print_rounds(
      args->label + " (a callback that does nothing: LibTorch's RecordFunction and boxing)",
      times[3], steps);
  plumb::bench::print_rounds(
      args->label + " (the same callback asking for no arguments: RecordFunction without boxing)",
      times[4], steps);
  // Capture against the boxing observer of the same round.
  plumb::bench::RoundTimes on_top{boxed.tracked, capture.tracked, {}};
  for (size_t i = 0; i < on_top.plain.size(); ++i)
    on_top.ratios.push_back(on_top.tracked[i] / on_top.plain[i]);
  plumb::bench::print_rounds(args->label + " (graph capture over the boxing observer)", on_top,
                             steps);
  const double observed = plumb::run::mean_of(on_top.plain);
  const double per_step = plumb::run::mean_of(on_top.tracked) - observed;
  const double build = build_s / std::max(builds, 1) / steps;
  std::printf(
      "graph: %zu nodes per %d steps, built in %.1f ms per step; a profile pass captures one "
      "step: %+.1f ms = %+.1f%% of a 3-step observed pass (warm-up not counted)\n",
      nodes, steps, 1e3 * build, 1e3 * (per_step + build),
      100 * (per_step + build) / (3 * observed));
  return 0;
}
