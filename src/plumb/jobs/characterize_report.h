// plumb characterize's reporters: the JSON document and the text summary of a
// CharacterizeResult (characterize_job.h).
#pragma once

#include <ostream>

#include <nlohmann/json.hpp>

#include "plumb/jobs/characterize_job.h"

namespace plumb::jobs {

nlohmann::ordered_json characterize_json(const CharacterizeResult& result);

void print_characterize(const CharacterizeResult& result, std::ostream& out);

}  // namespace plumb::jobs
