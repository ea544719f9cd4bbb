// Factory for the gpt2 workload (definition and sources in gpt2.cpp).
#pragma once

#include "plumb/core/workload.h"

namespace plumb::workloads {
Workload make_gpt2();
}  // namespace plumb::workloads
