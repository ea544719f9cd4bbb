// Factory for the speech workload (definition and sources in speech.cpp).
#pragma once

#include "plumb/core/workload.h"

namespace plumb::workloads {
Workload make_speech();
}  // namespace plumb::workloads
