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
    const double cpu_start = process_cpu_seconds();
    double wall = 0;
    {
      Attached attached(observer);
      for (int i = 0; i < steps; ++i) {
        const bool traced = trace && i == steps - 1;
        // The graph comes from the first profiled step and the trace from the last, so the
        // capture's own work (boxing every output) stays out of the traced timeline.
        const bool captured = graph && i == 0;
        if (traced) observer.record_events(true);
        if (captured) observer.capture_graph(true);
        observer.begin_step();
        const int64_t start_ns = steady_now_ns();
        p.profiled_s.push_back(loop.step());
        kill_point("profile");
        wall += p.profiled_s.back();
        if (captured) {
          observer.capture_graph(false);
          p.graph = build_step_graph(observer, start_ns, p.profiled_s.back());
          p.graph_captured = true;
        }
        if (traced) {
          p.trace_step_s = static_cast<double>(steady_now_ns() - start_ns) * 1e-9;
          observer.record_events(false);
          p.trace = resolve_trace(observer, start_ns);
        }
      }
    }
    p.profile.steps = steps;
    p.profile.step_s = wall / steps;
    p.profile.cpu_utilization = (process_cpu_seconds() - cpu_start) / (wall * o.threads);
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
  p.profile.op_self_s = observer.total_self_seconds() / p.profile.steps;
  p.profile.overhead_s = p.profile.step_s - p.profile.op_self_s;
  if (progress)
    progress(
        fmt::format("profiled {} step(s) at {} thread(s): {:.1f} ms per step, {:.1f}% in "
                    "operators",
                    p.profile.steps, o.threads, 1e3 * p.profile.step_s,
                    100 * p.profile.op_self_s / p.profile.step_s));
  return p;
}

}  // namespace plumb::profile
