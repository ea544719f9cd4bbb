// Factory for the seq2seq workload (definition and sources in seq2seq.cpp).
#pragma once

#include "plumb/core/workload.h"

namespace plumb::workloads {
Workload make_seq2seq();
}  // namespace plumb::workloads
