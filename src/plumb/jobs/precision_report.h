// plumb precision's reporters: the JSON document and the text tables of a PrecisionResult
// (precision_job.h).
#pragma once

#include <ostream>

#include <nlohmann/json.hpp>

#include "plumb/jobs/precision_job.h"

namespace plumb::jobs {

nlohmann::ordered_json precision_json(const PrecisionResult& result);

void print_precision(const PrecisionResult& result, std::ostream& out);

}  // namespace plumb::jobs
