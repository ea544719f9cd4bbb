// Factory for the a3c workload (definition and sources in a3c.cpp).
#pragma once

#include "plumb/core/workload.h"

namespace plumb::workloads {
Workload make_a3c();
}  // namespace plumb::workloads
