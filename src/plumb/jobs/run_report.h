// The reporters of plumb run and plumb suite: the JSON of the stored runs (a run object as plumb
// export prints it, docs/json.md) and the text tables.
#pragma once

#include <ostream>
#include <vector>

#include <nlohmann/json.hpp>

#include "plumb/core/workload.h"
#include "plumb/jobs/run_job.h"

namespace plumb::jobs {

// plumb run: one run as its object, several (a --dtype list) as {"runs": [...]}, samples
// included. plumb suite: always {"runs": [...]}, without samples.
enum class RunJson { kRun, kSuite };
nlohmann::ordered_json run_job_json(const RunJobResult& result, RunJson shape);

// plumb run: per run its summary row, step-time statistics, where it is stored and its
// reproducer.
void print_runs(std::ostream& out, const RunJobResult& result);

// plumb suite: one summary table, then which of `workloads` ran reduced for the CPU suite.
void print_suite(std::ostream& out, const RunJobResult& result,
                 const std::vector<const Workload*>& workloads);

}  // namespace plumb::jobs
