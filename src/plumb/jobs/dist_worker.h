// One worker of plumb dist: joins its world, trains the workload data-parallel, optionally times
// the all-reduce sweep, and leaves. A worker of a torchrun or Slurm job runs it in its own plumb
// dist process; a local launch (dist_launcher.h) starts this binary's hidden _dist-worker
// command, which takes its spec and cores from the environment and writes rank 0's result.
#pragma once

#include "plumb/core/config.h"
#include "plumb/core/workload.h"
#include "plumb/jobs/dist_protocol.h"
#include "plumb/run/process_group.h"

namespace plumb::jobs {

// The workload's config a worker trains with: its defaults with the spec's settings applied
// (throws UsageError for an unknown key or a bad value, before anything starts).
Config dist_worker_config(const Workload& workload, const DistSpec& spec);

// One worker's whole life in `world`; every rank returns the gathered result, rank 0 reports it.
DistWorkerResult run_dist_worker(const DistSpec& spec, const run::WorldInfo& world);

// The hidden _dist-worker command: the spec, the result file and the cores from the launcher's
// variables (dist_protocol.h), the world from RANK and WORLD_SIZE. Throws UsageError when
// started by hand.
void run_dist_worker_from_environment();

}  // namespace plumb::jobs
