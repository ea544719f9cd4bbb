// Factory for the paradnn_cnn generator (definition and sources in paradnn_cnn.cpp).
#pragma once

#include <cstdint>

#include "plumb/core/config.h"
#include "plumb/core/workload.h"

namespace plumb::workloads {

Workload make_paradnn_cnn();

// Trainable parameters of the CNN a config describes, in closed form (derivation at the top
// of paradnn_cnn.cpp).
int64_t paradnn_cnn_parameters(const Config& config);

}  // namespace plumb::workloads
