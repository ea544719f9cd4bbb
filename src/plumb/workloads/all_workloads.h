// Explicit registration of every reference workload (no static initialisers).
#pragma once

#include "plumb/core/registry.h"

namespace plumb::workloads {

// Fills `registry` with all workloads, in the order `plumb list` shows them.
void register_all_workloads(Registry& registry);

// The registry with every workload, built once on first use.
const Registry& default_registry();

}  // namespace plumb::workloads
