// plumb analyze decode's reporters: the JSON document (docs/json.md "plumb analyze decode")
// and the text tables of a decode sweep, its fit, ridge and knee.
#pragma once

#include <ostream>

#include <nlohmann/json.hpp>

#include "plumb/jobs/decode_roofline_job.h"

namespace plumb::jobs {

nlohmann::ordered_json decode_roofline_json(const DecodeRooflineResult& result);
void print_decode_roofline(const DecodeRooflineResult& result, std::ostream& out);

}  // namespace plumb::jobs
