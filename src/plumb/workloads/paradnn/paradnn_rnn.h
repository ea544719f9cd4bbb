// Factory for the paradnn_rnn generator (definition and sources in paradnn_rnn.cpp).
#pragma once

#include <cstdint>

#include "plumb/core/config.h"
#include "plumb/core/workload.h"

namespace plumb::workloads {

Workload make_paradnn_rnn();

// Trainable parameters of the RNN model a config describes, in closed form (see
// paradnn_rnn.cpp): V E + L G (2 E^2 + E) + E V + V, G = 1 rnn / 4 lstm / 3 gru.
int64_t paradnn_rnn_parameters(const Config& config);

}  // namespace plumb::workloads
