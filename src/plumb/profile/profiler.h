// A profiling pass: build the workload, warm it up to steady state, then observe a few steps
// with the operator observer attached. Separate from timing runs (docs/architecture.md, "Timing"):
// the figures here carry the observer's overhead, the runner's never do.
#pragma once

#include <string>
#include <vector>

#include "plumb/core/workload.h"
#include "plumb/profile/op_graph.h"
#include "plumb/profile/op_profile.h"
#include "plumb/run/run_result.h"
#include "plumb/run/runner.h"

namespace plumb::profile {

struct ProfileResult {
  run::RunStatus status = run::RunStatus::kOk;
  std::string message;  // why, when status != ok (the profile is then incomplete)
  std::string command;  // plumb profile command that reproduces it
  std::string started_at;
  int threads = 1;
  std::vector<double> warmup_s;    // warm-up iterations (observer detached)
  std::vector<double> profiled_s;  // observed steps (observer attached)
  // The observed step before them, not kept: it learns the calls (and captures the graph).
  // NaN for a pass stored before plumb recorded it.
  double learning_step_s = 0;
  // Kept steps that replayed the learned calls instead of boxing every operator's arguments
  // (OpObserver::allow_replay); the others boxed. -1 for a pass stored before plumb recorded it
  // (such passes boxed every step).
  int replayed_steps = 0;
  bool steady_detected = false;
  std::vector<std::string> warnings;
  StepProfile profile;
  // With a trace requested: every operator call and layer scope of the last observed step,
  // and that step's wall time.
  std::vector<TraceEvent> trace;
  double trace_step_s = 0;
  // The data-flow graph of the learning step (empty nodes when not captured); the trace, when
  // asked for, is of the last kept step.
  bool graph_captured = false;
  StepGraph graph;
  double units_per_step = 0;
  std::string throughput_unit;
};

// `options.threads` is the one thread count of this pass; `steps` observed steps kept, after
// one that learns the calls; with
// `trace`, the last of them is also recorded call by call (ProfileResult::trace); with
// `graph`, its data-flow graph is captured (ProfileResult::graph).
ProfileResult profile_workload(const Workload& workload, const run::RunOptions& options, int steps,
                               const run::ProgressFn& progress = {}, bool trace = false,
                               bool graph = true);

}  // namespace plumb::profile
