// Factory for the autoenc workload (definition and sources in autoenc.cpp).
#pragma once

#include "plumb/core/workload.h"

namespace plumb::workloads {
Workload make_autoenc();
}  // namespace plumb::workloads
