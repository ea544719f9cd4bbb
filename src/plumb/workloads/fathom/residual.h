// Factory for the residual workload, Fathom's 34-layer residual network (definition and sources
// in residual.cpp).
#pragma once

#include "plumb/core/workload.h"

namespace plumb::workloads {
Workload make_residual();
}  // namespace plumb::workloads
