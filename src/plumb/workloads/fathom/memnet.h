// Factory for the memnet workload (definition and sources in memnet.cpp).
#pragma once

#include "plumb/core/workload.h"

namespace plumb::workloads {
Workload make_memnet();
}  // namespace plumb::workloads
