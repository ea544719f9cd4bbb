// Factory for the deepq workload (definition and sources in deepq.cpp).
#pragma once

#include "plumb/core/workload.h"

namespace plumb::workloads {
Workload make_deepq();
}  // namespace plumb::workloads
