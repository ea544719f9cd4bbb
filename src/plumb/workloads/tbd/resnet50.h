// Factory for the resnet50 workload (definition and sources in resnet50.cpp).
#pragma once

#include "plumb/core/workload.h"

namespace plumb::workloads {
Workload make_resnet50();
}  // namespace plumb::workloads
