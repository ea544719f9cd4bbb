// Factory for the mobilenet_v1 workload (definition and sources in mobilenet_v1.cpp).
#pragma once

#include "plumb/core/workload.h"

namespace plumb::workloads {
Workload make_mobilenet_v1();
}  // namespace plumb::workloads
