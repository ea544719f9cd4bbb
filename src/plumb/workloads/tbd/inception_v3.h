// Factory for the inception_v3 workload (definition and sources in inception_v3.cpp).
#pragma once

#include "plumb/core/workload.h"

namespace plumb::workloads {
Workload make_inception_v3();
}  // namespace plumb::workloads
