// Factory for the vgg19 workload (definition and sources in vgg19.cpp).
#pragma once

#include "plumb/core/workload.h"

namespace plumb::workloads {
Workload make_vgg19();
}  // namespace plumb::workloads
