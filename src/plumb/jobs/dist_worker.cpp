// One worker's life in a data-parallel world (dist_worker.h).
#include "plumb/jobs/dist_worker.h"

#include <sched.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "plumb/core/atomic_file.h"
#include "plumb/core/errors.h"
#include "plumb/core/json_text.h"
#include "plumb/core/text.h"
#include "plumb/run/runner.h"
#include "plumb/workloads/all_workloads.h"

namespace plumb::jobs {
namespace {

// The device a worker of `world` trains on: the CPU, or the GPU of its local rank.
std::string dist_worker_device(const DistSpec& s, const run::WorldInfo& world) {
  return s.device == "cuda" ? fmt::format("cuda:{}", world.local_rank) : "cpu";
}

// Pins this process (and the threads it starts later) to `cpus`.
void pin_dist_worker(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) CPU_SET(c, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0)
    std::cerr << "plumb dist: could not pin the worker to its cores; timings may overlap\n";
}

}  // namespace

Config dist_worker_config(const Workload& workload, const DistSpec& spec) {
  Config c = workload.default_config();
  c.apply_settings(spec.sets);
  return c;
}

DistWorkerResult run_dist_worker(const DistSpec& s, const run::WorldInfo& world) {
  const Workload& w = workloads::default_registry().get(s.workload);
  run::DataParallelOptions o;
  o.run.workload = w.info.name;
  o.run.mode = Mode::kTrain;
  o.run.config = dist_worker_config(w, s);
  o.run.threads = s.threads_per_worker;
  o.run.device = dist_worker_device(s, world);
  o.run.seed = s.seed;
  o.bucket_bytes = s.bucket_bytes;
  o.overlap = s.overlap;
  o.steps = s.steps;
  o.warmup_steps = s.warmup_steps;
  run::validate_options(o.run);
  const c10::Device device = run::parse_device(o.run.device);
  const auto group = run::join_process_group(world, std::chrono::seconds(s.timeout_s), device);
  DistWorkerResult r;
  r.training = run::train_data_parallel(w, o, group);
  r.device = s.device;
  r.backend = run::backend_for(device);
  r.batch_per_worker = o.run.config.get_int("batch");
  // One worker has no peer: its all-reduce moves nothing (NCCL returns at once), so the sweep
  // would time a no-op and call it bandwidth.
  if (s.allreduce_sweep && r.training.status == run::RunStatus::kOk && r.training.workers > 1)
    r.allreduce = run::allreduce_sweep(group, device, 1 << 10, 256 << 20);
  run::leave_process_group(group, device);
  return r;
}

void run_dist_worker_from_environment() {
  const char* spec_text = std::getenv(kDistSpecVariable);
  const char* result = std::getenv(kDistResultVariable);
  if (spec_text == nullptr || result == nullptr)
    throw UsageError("_dist-worker is started by plumb dist, not by hand");
  const auto s = nlohmann::json::parse(spec_text).get<DistSpec>();
  if (const char* cpus = std::getenv(kDistCpusVariable)) {
    std::vector<int> mine;
    for (const auto& c : split(cpus, ',')) mine.push_back(std::stoi(c));
    pin_dist_worker(mine);
  }
  const auto world = run::world_from_environment();
  if (!world) throw UsageError("_dist-worker needs RANK and WORLD_SIZE");
  const DistWorkerResult r = run_dist_worker(s, *world);
  if (world->rank == 0) write_file_atomically(result, json_text(dist_worker_json(r)));
}

}  // namespace plumb::jobs
