// Facebook Table-1 layer traffic of a workload, traced in-process: one inference step with
// the operator observer (FLOPs and bytes per layer) and a layer recorder (how many times each
// layer runs) attached, and the model's parameters (weights per layer). Shared by
// `plumb info --intensity` and `plumb project`.
#pragma once

#include "plumb/analysis/profile_roofline.h"
#include "plumb/core/workload.h"

namespace plumb::jobs {

struct ModelTraffic {
  analysis::LayerTrafficResult traffic;
  double element_bytes = 0;  // of the model's dtype
};

ModelTraffic trace_layer_traffic(const Workload& workload, const Config& config);

}  // namespace plumb::jobs
