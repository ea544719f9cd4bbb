// Factory for the transformer workload (definition and sources in transformer.cpp).
#pragma once

#include "plumb/core/workload.h"

namespace plumb::workloads {
Workload make_transformer();
}  // namespace plumb::workloads
