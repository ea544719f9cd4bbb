// plumb dist's reporters. JSON (docs/dist.md): a measured world as it is printed and stored,
// the whole measurement as `plumb dist --json` prints it, and the projection as
// `plumb dist --project --json` prints it. Text: the tables plumb dist prints without --json.
#pragma once

#include <ostream>

#include <nlohmann/json.hpp>

#include "plumb/jobs/dist_job.h"
#include "plumb/jobs/dist_projection_job.h"

namespace plumb::jobs {

// Rank 0's result (dist_protocol.h), the link of a local launch, then the figures of an ok
// world. The store keeps it as the world's document (with the spec added); printed, the
// world's id follows.
nlohmann::ordered_json dist_world_json(const DistWorld& world);

// {"workload", "spec", "worlds": [dist_world_json + "id"]}
nlohmann::ordered_json dist_result_json(const DistResult& result);

// {"workload", "model", "anchors", "projection"}
nlohmann::ordered_json dist_projection_json(const DistProjectionResult& result);

// One row per world (a failed one with its status and message), each world of two or more
// workers split per worker, each world's all-reduce sweep, and where the worlds were stored.
void print_dist_result(std::ostream& out, const DistResult& result);

// The model, its error on the measured worlds, and the projection's table.
void print_dist_projection(std::ostream& out, const DistProjectionResult& result);

}  // namespace plumb::jobs
