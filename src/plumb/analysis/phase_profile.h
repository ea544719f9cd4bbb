// The phases of a generation in an operator profile: a generative model's inference step is a
// prefill then gen - 1 decode calls, each in its phase's user scope (core/generation.h); the
// observer names each operator's phase in its scope and times each phase (op_profile.h). These
// pure functions cut a profile into one phase's own profile, so that every breakdown, roofline
// and share computed on it is of that phase alone (fractions of the phase's time).
#pragma once

#include <optional>
#include <vector>

#include "plumb/core/generation.h"
#include "plumb/profile/op_profile.h"

namespace plumb::analysis {

// The phase an operator ran in, nullopt outside any (op.scope "forward" or "backward").
std::optional<Phase> op_phase(const profile::OpStat& op);
// Whether the profile is of a generation step (it timed at least one phase).
bool has_phases(const profile::StepProfile& profile);

// A phase's time in a step: `calls` calls (1 prefill; gen - 1 decodes, one per token) taking
// `seconds` per step together.
struct PhaseTime {
  Phase phase = Phase::kPrefill;
  double calls = 0;
  double seconds = 0;
  double per_call_s() const { return calls > 0 ? seconds / calls : 0; }
};
// The phases the profile timed, in order (prefill, decode); `only` keeps one of them.
std::vector<PhaseTime> phase_times(const profile::StepProfile& profile,
                                   std::optional<Phase> only = std::nullopt);

// The operators of `phase` as a profile of their own: ops = those that ran in it, step_s =
// the phase's wall time per step, op_self_s = their self time, overhead_s = the phase's time
// outside operators; phases holds the phase's own row. Throws UsageError when the profile
// timed no such phase.
profile::StepProfile phase_profile(const profile::StepProfile& profile, Phase phase);

}  // namespace plumb::analysis
