// Factory for the wgan_gp workload (definition and sources in wgan_gp.cpp).
#pragma once

#include "plumb/core/workload.h"

namespace plumb::workloads {
Workload make_wgan_gp();
}  // namespace plumb::workloads
