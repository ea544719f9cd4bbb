// plumb info's reporters: the JSON document (docs/json.md, "plumb info W --json") and the text
// description, config table, layer table and, with the intensity option, Facebook Table 1.
#pragma once

#include <ostream>

#include <nlohmann/json.hpp>

#include "plumb/jobs/info_job.h"

namespace plumb::jobs {

nlohmann::ordered_json info_json(const InfoJobResult& result);

void print_info(std::ostream& out, const InfoJobResult& result);

}  // namespace plumb::jobs
