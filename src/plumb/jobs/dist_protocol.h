// What plumb dist's launcher and its workers tell each other. The launcher hands every worker
// a DistSpec (JSON in an environment variable, with the world's variables beside it); rank 0
// writes its DistWorkerResult as JSON to the file the launcher named, and the launcher reads it
// back. The same JSON is the head of every world plumb dist prints and stores (dist_report.h),
// so its fields and their order are the stored format (docs/dist.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "plumb/run/data_parallel.h"

namespace plumb::jobs {

// Everything a worker needs to train its part of one world.
struct DistSpec {
  std::string workload;
  std::string device = "cpu";     // "cpu" (Gloo) or "cuda": GPU LOCAL_RANK per worker (NCCL)
  std::vector<std::string> sets;  // "key=value", batch included
  int threads_per_worker = 1;
  int64_t bucket_bytes = 25 << 20;
  bool overlap = true;
  int steps = 20, warmup_steps = 5;
  uint64_t seed = 0;
  int timeout_s = 120;
  bool allreduce_sweep = false;
};

// The spec travels as JSON (nlohmann::json: the macro converts that type only, so its keys come
// out sorted), field by field, named as in the struct; a field missing (a world stored before
// it existed) keeps its default.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(DistSpec, workload, device, sets,
                                                threads_per_worker, bucket_bytes, overlap, steps,
                                                warmup_steps, seed, timeout_s, allreduce_sweep)

// Rank 0's result of one world: the training figures (the slowest worker's per step) and, when
// the spec asked for it, the all-reduce sweep.
struct DistWorkerResult {
  std::string device;   // the spec's: "cpu" or "cuda"
  std::string backend;  // "gloo" or "nccl"
  int64_t batch_per_worker = 0;
  run::DataParallelResult training;
  std::vector<run::AllreduceSample> allreduce;  // empty unless swept (2 or more workers)
};

// The environment a local worker is started with, besides the world's RANK, LOCAL_RANK,
// WORLD_SIZE, MASTER_ADDR and MASTER_PORT.
inline constexpr const char* kDistLauncherVariable = "PLUMB_DIST_LAUNCHER";  // "1"
inline constexpr const char* kDistSpecVariable = "PLUMB_DIST_SPEC";          // the spec's JSON
inline constexpr const char* kDistResultVariable = "PLUMB_DIST_RESULT";      // where rank 0 writes
inline constexpr const char* kDistCpusVariable = "PLUMB_DIST_CPUS";          // "3,4": cores to pin

// The result as JSON, and back (throws nlohmann's errors on a document that is not one).
nlohmann::ordered_json dist_worker_json(const DistWorkerResult& r);
DistWorkerResult dist_worker_from_json(const nlohmann::ordered_json& j);

}  // namespace plumb::jobs
