// What explains a difference between two sides of plumb compare: how their environments
// differ (machine, libraries, plumb build, load), and where the step time moved by operator
// category when both sides have a stored profile. Pure functions over stored records.
#pragma once

#include <string>
#include <vector>

#include "plumb/platform/environment.h"
#include "plumb/profile/op_profile.h"

namespace plumb::analysis {

// One environment field on both sides. A side whose runs disagree lists its distinct values
// joined with " | " (the field then differs as soon as the texts differ).
struct EnvironmentField {
  std::string field;  // "cpu_model", "libtorch_version", ... (platform::Environment's names)
  std::string a, b;
  bool differs = false;
};

// Load average differences below this (half a busy core) are not flagged: the 1-minute load
// moves that much between any two runs.
inline constexpr double kLoadAverageTolerance = 0.5;

// Every field that identifies the machine, its libraries and plumb's build, then the
// conditions (highest 1-minute load average at the start of a run, noisy-machine warnings).
// The host name differs between two machines by design; it is listed like the rest.
std::vector<EnvironmentField> environment_fields(const std::vector<platform::Environment>& a,
                                                 const std::vector<platform::Environment>& b);

// Per operator category (breakdown()'s category view, "uncosted" included), plus
// "(outside operators)" for framework time between operators: self time per step on each
// side, the delta (B - A) and its share of the whole step-time delta (NaN when the step times
// are equal). Sorted by |delta|, largest first.
struct CategoryDelta {
  std::string category;
  double a_s = 0, b_s = 0;
  double delta_s = 0;
  double share_of_delta = 0;
};
inline constexpr char kOutsideOperators[] = "(outside operators)";

std::vector<CategoryDelta> category_deltas(const profile::StepProfile& a,
                                           const profile::StepProfile& b);

}  // namespace plumb::analysis
