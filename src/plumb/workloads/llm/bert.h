// Factory for the bert workload (definition and sources in bert.cpp).
#pragma once

#include "plumb/core/workload.h"

namespace plumb::workloads {
Workload make_bert();
}  // namespace plumb::workloads
