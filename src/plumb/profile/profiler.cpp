// Profiling pass (see profiler.h).
#include "plumb/profile/profiler.h"

#include <algorithm>
#include <chrono>
#include <map>

#include <fmt/format.h>

#include "plumb/core/errors.h"
#include "plumb/core/kill_point.h"
#include "plumb/profile/op_observer.h"
#include "plumb/run/heap_policy.h"
#include "plumb/run/step_loop.h"

namespace plumb::profile {
namespace {

// Detaches on every exit path, so a failing step never leaves callbacks installed.
class Attached {
 public:
  explicit Attached(OpObserver& o) : observer_(o) { observer_.attach(); }
  ~Attached() { observer_.detach(); }
  Attached(const Attached&) = delete;
  Attached& operator=(const Attached&) = delete;

 private:
  OpObserver& observer_;
};

// plumb profile takes no sampling budgets: its warm-up and its steps shape the pass.
std::string profile_command(const Workload& w, const run::RunOptions& o, int steps) {
  std::vector<std::string> own = {"--max-warmup-time", fmt::format("{}", o.max_warmup_s)};
  if (o.steady.window != run::RunOptions{}.steady.window)
    own.insert(own.end(), {"--warmup-window", std::to_string(o.steady.window)});
  own.insert(own.end(), {"--steps", std::to_string(steps)});
  return run::command_line("plumb profile", w, o, own);
}

}  // namespace

namespace {

// The recorded events of one step, resolved to names, layers and costs, times from the step's
// start, threads renumbered so the step's own thread is 0.
std::vector<TraceEvent> resolve_trace(const OpObserver& observer, int64_t step_start_ns) {
  std::vector<const OpObserver::Event*> events;
  for (const auto& e : observer.events()) events.push_back(&e);
  std::stable_sort(events.begin(), events.end(),
                   [](const auto* a, const auto* b) { return a->start_ns < b->start_ns; });
  std::map<int, int> thread_of;  // the first event starts on the step's thread: index 0
  std::vector<TraceEvent> out;
  for (const auto* e : events) {
    const int thread =
        thread_of.emplace(e->thread, static_cast<int>(thread_of.size())).first->second;
    TraceEvent t;
    t.layer = observer.layer_name(e->layer);
    if (e->totals == nullptr) {
      t.name = t.layer;
      t.kind = "layer";
    } else {
      const auto& totals = *e->totals;
      t.name = totals.key.name;
      const bool node = t.name.rfind("autograd::", 0) == 0 ||
                        (totals.key.backward && t.name.find("::") == std::string::npos);
      t.kind = node ? "autograd" : "operator";
      t.signature = totals.key.signature;
      if (totals.cost.costed && !totals.composite) {
        t.flops = totals.cost.flops;
        t.bytes = totals.cost.bytes_read + totals.cost.bytes_written;
      }
    }
    t.start_s = static_cast<double>(e->start_ns - step_start_ns) * 1e-9;
    t.duration_s = static_cast<double>(e->duration_ns) * 1e-9;
    t.thread = thread;
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace

ProfileResult profile_workload(const Workload& workload, const run::RunOptions& o, int steps,
                               const run::ProgressFn& progress, bool trace, bool graph) {
  run::validate_options(o);
  if (steps < 1) throw UsageError(fmt::format("--steps must be at least 1, got {}", steps));
  ProfileResult p;
  p.command = profile_command(workload, o, steps);
  p.started_at = utc_now_iso8601();
  p.threads = o.threads;
  p.throughput_unit = workload.info.throughput_unit;
  run::RunResult r;  // collects warm-up samples, warnings and the failure status
  run::apply_heap_policy(o.heap, r.warnings);
  OpObserver observer;
  run::with_model(workload, o, r, [&](run::StepLoop& loop) {
    p.units_per_step = loop.units();
    run::warm_up(loop, o, r, progress);
    observer.allow_replay(loop.batches_share_shapes());
    Attached attached(observer);
    // One observed step first, not kept: it meets every operator group (boxing the arguments
    // the groups' costs need) and records the calls, so that the kept steps replay them instead
    // of boxing. The graph is captured on it, so the capture's own work (every output boxed)
    // stays out of the kept steps and the trace.
    if (graph) observer.capture_graph(true);
    observer.begin_step();
    const int64_t learn_start_ns = steady_now_ns();
    p.learning_step_s = loop.step();
    kill_point("profile");
    observer.end_step();
    if (graph) {
      observer.capture_graph(false);
      p.graph = build_step_graph(observer, learn_start_ns, p.learning_step_s);
      p.graph_captured = true;
    }
    observer.discard_counts();
    const double cpu_start = process_cpu_seconds();
    double wall = 0, wall_all = 0;  // kept steps; all of them, for the CPU utilisation
    while (static_cast<int>(p.profiled_s.size()) < steps) {
      const bool traced = trace && static_cast<int>(p.profiled_s.size()) == steps - 1;
      if (traced) observer.record_events(true);
      observer.begin_step();
      const int64_t start_ns = steady_now_ns();
      const double step_s = loop.step();
      kill_point("profile");
      // A replayed step that did not repeat the learned calls is not kept; the observer boxes
      // from then on, so the step is taken again once.
      const bool kept = observer.end_step();
      wall_all += step_s;
      if (traced) observer.record_events(false);
      if (!kept) continue;
      p.profiled_s.push_back(step_s);
      wall += step_s;
      if (traced) {
        p.trace_step_s = static_cast<double>(steady_now_ns() - start_ns) * 1e-9;
        p.trace = resolve_trace(observer, start_ns);
      }
    }
    p.replayed_steps = observer.replayed_steps();
    p.profile.steps = steps;
    p.profile.step_s = wall / steps;
    p.profile.cpu_utilization = (process_cpu_seconds() - cpu_start) / (wall_all * o.threads);
  });
  p.status = r.status;
  p.message = r.message;
  p.warmup_s = r.warmup_s;
  p.steady_detected = r.steady_detected;
  p.warnings = r.warnings;
  if (p.status != run::RunStatus::kOk) {
    if (p.profiled_s.empty()) return p;
    // A step failed mid-way: keep what was observed, marked incomplete by the status.
    p.profile.steps = static_cast<int>(p.profiled_s.size());
    double wall = 0;
    for (double s : p.profiled_s) wall += s;
    p.profile.step_s = wall / p.profile.steps;
  }
  p.profile.ops = observer.aggregate(p.profile.steps);
  p.profile.phases = observer.phase_rows(p.profile.steps);
  p.profile.op_self_s = observer.total_self_seconds() / p.profile.steps;
  p.profile.overhead_s = p.profile.step_s - p.profile.op_self_s;
  if (progress)
    progress(
        fmt::format("profiled {} step(s) at {} thread(s) ({} replaying the calls learned on one "
                    "step before them): {:.1f} ms per step, {:.1f}% in operators",
                    p.profile.steps, o.threads, p.replayed_steps, 1e3 * p.profile.step_s,
                    100 * p.profile.op_self_s / p.profile.step_s));
  return p;
}

}  // namespace plumb::profile
