// plumb sweep's reporters: the JSON document (docs/json.md: the sweep, the shard, what ran and
// was skipped, the time spent, each finished point with its parameters and metrics) and the
// one-line text summary.
#pragma once

#include <ostream>

#include <nlohmann/json.hpp>

#include "plumb/jobs/sweep_job.h"

namespace plumb::jobs {

nlohmann::ordered_json sweep_job_json(const SweepJobResult& result);

void print_sweep(std::ostream& out, const SweepJobResult& result);

}  // namespace plumb::jobs
