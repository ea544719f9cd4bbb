// plumb project's reporters: the JSON document (docs/json.md, "plumb project") and the text table
// of time, achieved ops/s and on-chip weights per point, with per-layer placement tables when
// asked for (`with_layers`, --layers).
#pragma once

#include <ostream>

#include <nlohmann/json.hpp>

#include "plumb/jobs/project_job.h"

namespace plumb::jobs {

nlohmann::ordered_json project_json(const ProjectJobResult& result, bool with_layers);

void print_project(std::ostream& out, const ProjectJobResult& result, bool with_layers);

}  // namespace plumb::jobs
