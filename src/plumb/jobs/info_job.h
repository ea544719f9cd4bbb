// plumb info's job: a workload built at batch 1 (parameters do not depend on the batch), its
// trainable parameters, its layers with their module types, parameters and output shapes, and
// the work of one example's inference, all from one traced inference step; with the intensity
// option also the Facebook paper's Table 1 (ops per element of traffic per compute layer) at
// the requested batch. Reporters: info_report.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "plumb/analysis/intensity.h"
#include "plumb/core/config.h"
#include "plumb/core/layer_scope.h"
#include "plumb/core/workload.h"
#include "plumb/jobs/layer_traffic_trace.h"
#include "plumb/profile/forward_cost.h"

namespace plumb::jobs {

struct InfoJobOptions {
  Config config;  // resolved
  bool intensity = false;
  // Table 1 is per inference at a small batch: 1 unless the batch was given.
  bool batch_given = false;
};

struct InfoLayer {
  LayerRecord record;
  std::string type;  // the module's type: "Bottleneck", "Conv2d"
  int64_t params = 0;
};

struct InfoJobResult {
  const Workload* workload = nullptr;
  Config config;
  int64_t params = 0;
  profile::ForwardCost forward;  // of one example
  std::vector<InfoLayer> layers;
  // With the intensity option:
  std::optional<ModelTraffic> traffic;
  std::optional<analysis::IntensitySummary> summary;
  int64_t intensity_batch = 1;
};

InfoJobResult run_info_job(const Workload& workload, const InfoJobOptions& options);

}  // namespace plumb::jobs
