// Factory for the seq2seq_gru workload (definition and sources in seq2seq_gru.cpp).
#pragma once

#include "plumb/core/workload.h"

namespace plumb::workloads {
Workload make_seq2seq_gru();
}  // namespace plumb::workloads
