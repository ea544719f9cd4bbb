// Factory for the faster_rcnn_shufflenet workload (definition and sources in
// faster_rcnn_shufflenet.cpp).
#pragma once

#include "plumb/core/workload.h"

namespace plumb::workloads {
Workload make_faster_rcnn_shufflenet();
}  // namespace plumb::workloads
