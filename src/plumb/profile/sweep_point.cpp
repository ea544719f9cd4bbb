// One sweep point measured (see sweep_point.h).
#include "plumb/profile/sweep_point.h"

#include <algorithm>
#include <chrono>

#include "plumb/core/clock.h"
#include "plumb/profile/forward_cost.h"
#include "plumb/run/runner.h"

namespace plumb::profile {

run::RunOptions sweep_point_options(const Workload& w, const run::SweepSpec& spec,
                                    const run::SweepPoint& p) {
  run::RunOptions o;
  o.workload = w.info.name;
  o.mode = p.mode;
  o.dtype = p.dtype;
  o.config = run::point_config(w, spec, p);
  o.threads = spec.threads;
  o.seed = spec.seed;
  o.target_ci = spec.budget.target_ci;
  o.min_samples = spec.budget.min_samples;
  o.max_time_s = spec.budget.max_time_s;
  o.max_warmup_s = spec.budget.max_warmup_s;
  run::validate_options(o);
  return o;
}

SweepPointMeasurement measure_sweep_point(const Workload& w, const run::SweepSpec& spec,
                                          const run::SweepPoint& p) {
  const auto start = std::chrono::steady_clock::now();
  SweepPointMeasurement m;
  m.options = sweep_point_options(w, spec, p);
  const run::RunOptions& o = m.options;
  m.run = run::run_workload(w, o);
  if (m.run.status == run::RunStatus::kOk) {
    if (spec.measure_memory) m.memory = profile_memory(w, o, MemoryOptions{});
    if (spec.measure_profile) {
      run::RunOptions po = o;  // a short warm-up: the timing run already reached steady state
      po.max_warmup_s = std::min(o.max_warmup_s, 2.0);
      m.ops = profile_workload(w, po, 1);
    }
    Config one = o.config;
    one.set_int("batch", 1);
    auto model = w.build(one, torch::Device(torch::kCPU));
    m.params = static_cast<double>(count_trainable_parameters(model->module()));
    m.flops_per_step = forward_cost(*model).flops * static_cast<double>(o.config.get_int("batch")) *
                       (o.mode == Mode::kTrain ? 3 : 1);
  }
  m.wall_s = seconds_since(start);
  return m;
}

}  // namespace plumb::profile
