// Factory for the paradnn_transformer generator (definition and sources in
// paradnn_transformer.cpp).
#pragma once

#include "plumb/core/workload.h"

namespace plumb::workloads {
Workload make_paradnn_transformer();
}  // namespace plumb::workloads
