// Cutting an operator profile by generation phase (see phase_profile.h).
#include "plumb/analysis/phase_profile.h"

#include <fmt/format.h>

#include "plumb/core/errors.h"

namespace plumb::analysis {

std::optional<Phase> op_phase(const profile::OpStat& op) {
  return phase_from_name(op.scope);
}

bool has_phases(const profile::StepProfile& profile) {
  return !profile.phases.empty();
}

std::vector<PhaseTime> phase_times(const profile::StepProfile& profile, std::optional<Phase> only) {
  std::vector<PhaseTime> out;
  for (Phase phase : all_phases()) {
    if (only && *only != phase) continue;
    for (const profile::OpStat& row : profile.phases)
      if (op_phase(row) == phase) out.push_back({phase, row.calls, row.inclusive_s});
  }
  return out;
}

profile::StepProfile phase_profile(const profile::StepProfile& profile, Phase phase) {
  profile::StepProfile out;
  for (const profile::OpStat& row : profile.phases)
    if (op_phase(row) == phase) out.phases.push_back(row);
  if (out.phases.empty())
    throw UsageError(fmt::format(
        "this profile has no {} phase: only a generative model's inference step has one",
        phase_name(phase)));
  out.steps = profile.steps;
  out.cpu_utilization = profile.cpu_utilization;
  out.step_s = out.phases.front().inclusive_s;
  for (const profile::OpStat& op : profile.ops) {
    if (op_phase(op) != phase) continue;
    out.op_self_s += op.self_s;
    out.ops.push_back(op);
  }
  out.overhead_s = out.step_s - out.op_self_s;
  return out;
}

}  // namespace plumb::analysis
