// How the store keeps a generation's phases in an operator profile without columns of their
// own: op_stats' scope and kind accept only the values from before phases existed (CHECK
// constraints), so an operator's phase rides in its stored layer ("plumb::decode" alone outside
// named layers, "plumb::decode/<layer>" inside one: a phase's user scope, which no module path
// starts with) under scope "forward", and a phase row (op_profile.h) is stored as a composite
// row named by its scope (no operator has that name). Reading reverses both.
#pragma once

#include "plumb/profile/op_profile.h"

namespace plumb::profile {

// The row as op_stats stores it.
OpStat to_stored(const OpStat& op);
// The row as it was before to_stored (a phase row's kind is kPhaseRow again); any other
// stored row unchanged.
OpStat from_stored(OpStat stored);

}  // namespace plumb::profile
