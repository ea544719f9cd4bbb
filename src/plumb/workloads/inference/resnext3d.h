// Factory for the resnext3d workload (definition and sources in resnext3d.cpp).
#pragma once

#include "plumb/core/workload.h"

namespace plumb::workloads {
Workload make_resnext3d();
}  // namespace plumb::workloads
