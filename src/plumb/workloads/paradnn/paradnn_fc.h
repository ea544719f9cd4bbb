// Factory for the paradnn_fc generator (definition and sources in paradnn_fc.cpp).
#pragma once

#include <cstdint>

#include "plumb/core/config.h"
#include "plumb/core/workload.h"

namespace plumb::workloads {

Workload make_paradnn_fc();

// Trainable parameters of the FC model a config describes, in closed form (see paradnn_fc.cpp):
// (input + 1) N + (layers - 1)(N + 1) N + (N + 1) output, N = nodes.
int64_t paradnn_fc_parameters(const Config& config);

}  // namespace plumb::workloads
