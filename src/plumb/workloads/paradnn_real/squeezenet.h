// Factory for the squeezenet1_0 workload (definition and sources in squeezenet.cpp).
#pragma once

#include "plumb/core/workload.h"

namespace plumb::workloads {
Workload make_squeezenet1_0();
}  // namespace plumb::workloads
