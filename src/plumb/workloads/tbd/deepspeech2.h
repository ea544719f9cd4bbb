// Factory for the deepspeech2 workload (definition and sources in deepspeech2.cpp).
#pragma once

#include "plumb/core/workload.h"

namespace plumb::workloads {
Workload make_deepspeech2();
}  // namespace plumb::workloads
