// Profiling pass (see profiler.h).
#include "plumb/profile/profiler.h"

#include <chrono>

#include <fmt/format.h>

#include "plumb/core/errors.h"
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

std::string profile_command(const Workload& w, const run::RunOptions& o, int steps) {
  std::string cmd = run::reproducer_command(w, o);
  const std::string run_prefix = "plumb run ";
  if (cmd.rfind(run_prefix, 0) == 0) cmd = "plumb profile " + cmd.substr(run_prefix.size());
  return cmd + fmt::format(" --steps {}", steps);
}

}  // namespace

ProfileResult profile_workload(const Workload& workload, const run::RunOptions& o, int steps,
                               const run::ProgressFn& progress) {
  run::validate_options(o);
  if (steps < 1) throw UsageError(fmt::format("--steps must be at least 1, got {}", steps));
  ProfileResult p;
  p.command = profile_command(workload, o, steps);
  p.started_at = run::utc_now_iso8601();
  p.threads = o.threads;
  p.throughput_unit = workload.info.throughput_unit;
  run::RunResult r;  // collects warm-up samples, warnings and the failure status
  run::keep_freed_memory_in_process(r.warnings);
  OpObserver observer;
  run::with_model(workload, o, r, [&](run::StepLoop& loop) {
    p.units_per_step = loop.units();
    run::warm_up(loop, o, r, progress);
    const double cpu_start = run::process_cpu_seconds();
    double wall = 0;
    {
      Attached attached(observer);
      for (int i = 0; i < steps; ++i) {
        p.profiled_s.push_back(loop.step());
        wall += p.profiled_s.back();
      }
    }
    p.profile.steps = steps;
    p.profile.step_s = wall / steps;
    p.profile.cpu_utilization = (run::process_cpu_seconds() - cpu_start) / (wall * o.threads);
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
