// plumb dist --project as a job: the alpha-beta model (analysis/dist_projection.h) fitted to the
// stored worlds of a workload, checked against them, and projected to other worker counts on a
// link of given rate and latency. A model, not a measurement. The reporters are in
// dist_report.h.
#pragma once

#include <string>
#include <vector>

#include "plumb/analysis/dist_projection.h"

namespace plumb::jobs {

struct DistProjectionOptions {
  std::string workload;
  std::vector<int> counts;  // worker counts to project to
  double link_gbps = 0;     // the projected link's rate; 0: this machine's loopback
  double latency_us = 0;    // per ring step
  std::string db_path = "plumb.db";
};

// A measured world and what the model says of it.
struct DistProjectionAnchor {
  analysis::DistWorldPoint measured;
  analysis::DistProjection modelled;

  double step_error() const { return modelled.step_s / measured.step_s - 1; }  // relative
};

struct DistProjectionResult {
  std::string workload;
  analysis::DistModel model;
  double latency_s = 0;
  double link_gbps = 0;
  std::vector<DistProjectionAnchor> anchors;         // every stored world it was fitted on
  std::vector<analysis::DistProjection> projection;  // one per requested count
};

// Throws UsageError for a negative rate or latency, and when the store holds no worlds of the
// workload (or not the ones the model needs).
DistProjectionResult project_dist(const DistProjectionOptions& options);

}  // namespace plumb::jobs
