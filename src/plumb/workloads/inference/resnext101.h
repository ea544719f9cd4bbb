// Factories for the ResNeXt-101 inference workloads (definitions and sources in resnext101.cpp).
#pragma once

#include "plumb/core/workload.h"

namespace plumb::workloads {
Workload make_resnext101_32x4d();
Workload make_resnext101_32x48d();
}  // namespace plumb::workloads
