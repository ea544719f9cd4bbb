// plumb analyze fusion's reporters: the JSON document and the text tables of a FusionResult
// (fusion_job.h).
#pragma once

#include <ostream>

#include <nlohmann/json.hpp>

#include "plumb/jobs/fusion_job.h"

namespace plumb::jobs {

nlohmann::ordered_json fusion_json(const FusionResult& result);

void print_fusion(const FusionResult& result, std::ostream& out);

}  // namespace plumb::jobs
