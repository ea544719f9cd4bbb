// What plumb serve assumes for a workload when the user does not say: the tail-latency bound and
// percentile, the largest batch the batcher may form and how long it holds a query for others.
// Taken from the Facebook inference study's Table 1 where it gives a constraint (recommendation
// and translation: tens of milliseconds; computer vision: none strict) and from the domain's
// MLPerf Inference server bound otherwise; printed with their source, and every one overridable.
#pragma once

#include <cstdint>
#include <string>

#include "plumb/core/workload.h"

namespace plumb::run {

struct ServeDefaults {
  double bound_s = 0;
  double percentile = 0.99;
  int64_t max_batch = 1;
  double max_wait_s = 0;
  std::string source;  // one line: where the bound and batch come from
};

ServeDefaults serve_defaults(const WorkloadInfo& info);

// The batcher's default wait for a bound: 5% of it, long enough to fill a batch at high load,
// short against the bound at low load.
double default_max_wait_s(double bound_s);

}  // namespace plumb::run
