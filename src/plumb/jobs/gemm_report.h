// plumb gemm's reporters: the JSON document and the text tables of a GemmResult (gemm_job.h).
#pragma once

#include <ostream>

#include <nlohmann/json.hpp>

#include "plumb/jobs/gemm_job.h"

namespace plumb::jobs {

nlohmann::ordered_json gemm_json(const GemmResult& result);

void print_gemm(const GemmResult& result, std::ostream& out);

}  // namespace plumb::jobs
