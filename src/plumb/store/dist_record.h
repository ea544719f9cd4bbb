// One world of a data-parallel measurement as the store holds it.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "plumb/platform/environment.h"
#include "plumb/run/run_result.h"

namespace plumb::store {

// One world (worker count) of a `plumb dist` measurement (schema v8).
struct StoredDistWorld {
  int64_t id = 0;
  std::string started_at, workload, link = "none", tag;
  int workers = 1, threads_per_worker = 1;
  int64_t batch_per_worker = 0, bucket_bytes = 0, gradient_bytes = 0, peak_rss_bytes = 0;
  bool overlap = true;
  run::RunStatus status = run::RunStatus::kOk;
  std::string message, throughput_unit;
  // NaN when not measured (a failed world; efficiency without a one-worker world).
  double throughput = 0, step_mean_s = 0, step_ci_rel = 0, efficiency = 0;
  double compute_s = 0, exposed_s = 0, overlapped_s = 0;
  platform::Environment environment;
  nlohmann::ordered_json document;  // the world's whole result (docs/dist.md)
};

}  // namespace plumb::store
