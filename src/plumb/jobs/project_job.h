// plumb project's job (Facebook inference paper, Fig. 3): a workload's inference traced layer by
// layer (ops, weights, activations), then projected onto a hypothetical accelerator for every
// on-chip bandwidth and capacity asked for (analysis/projection.h: per-layer roofline, greedy
// on-chip allocation). Reporters: project_report.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "plumb/analysis/projection.h"
#include "plumb/core/config.h"
#include "plumb/core/workload.h"

namespace plumb::jobs {

struct ProjectJobOptions {
  Config config;                              // resolved, batch included
  double peak_tops = 100;                     // tera-ops/s
  double dram_gbs = 100;                      // GB/s
  double element_bytes = 1;                   // per weight/activation element on the accelerator
  std::vector<double> onchip_mb, onchip_gbs;  // the curves: every bandwidth x every capacity
};

struct ProjectedPoint {
  double onchip_mb = 0, onchip_gbs = 0;
  analysis::Accelerator accelerator;
  analysis::Projection projection;
};

struct ProjectJobResult {
  std::string workload;
  int64_t batch = 1;
  ProjectJobOptions options;
  size_t layers = 0;                   // compute layers traced
  std::vector<std::string> unmatched;  // compute layers that read no parameter
  std::vector<ProjectedPoint> points;  // by bandwidth, then capacity
};

// The peak, the bandwidths and the element size are positive.
ProjectJobResult run_project_job(const Workload& workload, const ProjectJobOptions& options);

}  // namespace plumb::jobs
