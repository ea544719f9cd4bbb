// Factory for the alexnet workload (definition and sources in alexnet.cpp).
#pragma once

#include "plumb/core/workload.h"

namespace plumb::workloads {
Workload make_alexnet();
}  // namespace plumb::workloads
