// Factory for the densenet121 workload (definition and sources in densenet121.cpp).
#pragma once

#include "plumb/core/workload.h"

namespace plumb::workloads {
Workload make_densenet121();
}  // namespace plumb::workloads
