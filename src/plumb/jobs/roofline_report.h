// plumb roofline's reporters: the placements of roofline_job.h as one JSON document or as the
// roofs' summary and a table (the whole step first, then the `top` rows).
#pragma once

#include <cstddef>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "plumb/jobs/roofline_job.h"

namespace plumb::jobs {

// How the placements are shown: the grouping as the user named it, the `top` rows (0: all in
// JSON, 25 in the table).
struct RooflineView {
  std::string by_name = "layer";
  size_t top = 0;
};

nlohmann::ordered_json roofline_json(const RooflineJobResult& result, const RooflineView& view);
void print_roofline(std::ostream& out, const RooflineJobResult& result, const RooflineView& view);

}  // namespace plumb::jobs
