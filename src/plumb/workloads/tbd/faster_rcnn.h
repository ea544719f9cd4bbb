// Factory for the faster_rcnn workload (definition and sources in faster_rcnn.cpp).
#pragma once

#include "plumb/core/workload.h"

namespace plumb::workloads {
Workload make_faster_rcnn();
}  // namespace plumb::workloads
