// Factory for the retinanet workload (definition and sources in retinanet.cpp).
#pragma once

#include "plumb/core/workload.h"

namespace plumb::workloads {
Workload make_retinanet();
}  // namespace plumb::workloads
