// Factory for the llama workload (definition and sources in llama.cpp).
#pragma once

#include "plumb/core/workload.h"

namespace plumb::workloads {
Workload make_llama();
}  // namespace plumb::workloads
