// Factory for the gnmt workload (definition and sources in gnmt.cpp).
#pragma once

#include "plumb/core/workload.h"

namespace plumb::workloads {
Workload make_gnmt();
}  // namespace plumb::workloads
