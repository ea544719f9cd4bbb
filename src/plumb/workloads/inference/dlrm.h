// Factory for the dlrm workload (definition and sources in dlrm.cpp).
#pragma once

#include "plumb/core/workload.h"

namespace plumb::workloads {
Workload make_dlrm();
}  // namespace plumb::workloads
