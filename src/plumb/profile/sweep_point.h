// Measuring one point of a sweep (plumb sweep): the timed run with the spec's budgets, and
// where the spec asks and the run succeeded, the point's memory pass and one observed
// operator step; plus the model's FLOPs per step from the cost model and its parameter count.
// Nothing is stored here: the caller stores the point whole or not at all.
#pragma once

#include <optional>

#include "plumb/core/workload.h"
#include "plumb/profile/memory_profiler.h"
#include "plumb/profile/profiler.h"
#include "plumb/run/run_result.h"
#include "plumb/run/sweep_spec.h"

namespace plumb::profile {

struct SweepPointMeasurement {
  run::RunOptions options;  // what the point ran with
  run::RunResult run;
  std::optional<MemoryProfileResult> memory;  // spec measures memory, run ok
  std::optional<ProfileResult> ops;           // spec measures profile, run ok
  // A step's model FLOPs (a traced forward of one example x batch, x3 in training: backward
  // costs about twice the forward) and the trainable parameters; 0 when the run failed.
  double flops_per_step = 0;
  double params = 0;
  double wall_s = 0;  // everything above, building and costing included
};

// The run options of a point: the workload's config with the spec's sets and the point's
// values, the spec's threads, seed and budgets. Validated (UsageError).
run::RunOptions sweep_point_options(const Workload& workload, const run::SweepSpec& spec,
                                    const run::SweepPoint& point);

SweepPointMeasurement measure_sweep_point(const Workload& workload, const run::SweepSpec& spec,
                                          const run::SweepPoint& point);

}  // namespace plumb::profile
