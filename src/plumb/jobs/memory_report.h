// plumb memory's reporters: the passes of memory_job.h as one JSON document or as text (the
// categories per batch with their per-example slopes, the largest batch's peak and the layers
// making its feature maps, the memory limit's search).
#pragma once

#include <cstddef>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "plumb/jobs/memory_job.h"
#include "plumb/profile/memory_profiler.h"

namespace plumb::jobs {

// "weights 1.2 MiB, feature_maps 3.4 MiB": the categories holding bytes, in category order.
std::string memory_mix_text(const profile::CategoryBytes& bytes);

// `top`: the layers listed by feature-map bytes.
nlohmann::ordered_json memory_json(const MemoryJobResult& result, size_t top);
void print_memory(std::ostream& out, const MemoryJobResult& result, size_t top);

}  // namespace plumb::jobs
