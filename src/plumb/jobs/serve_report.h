// plumb serve's reporters. JSON: the stored session's document (store::serve_session_json) for one
// session, {"sessions": [...]} for several (a --dtype list); fields in docs/json.md. Text: each
// session's measurements, its latency floor and throughput ceiling, and the Server search's
// outcome with the batching that reached it.
#pragma once

#include <ostream>

#include <nlohmann/json.hpp>

#include "plumb/jobs/serve_job.h"

namespace plumb::jobs {

nlohmann::ordered_json serve_job_json(const ServeJobResult& result);

void print_serve_session(std::ostream& out, const ServedSession& session);

}  // namespace plumb::jobs
