// Sweeps and their points as the store holds them, and what a merge of two stores added.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace plumb::store {

// A sweep as registered in a database: its canonical spec identifies it (run::sweep_key).
struct StoredSweep {
  int64_t id = 0;
  std::string name;
  std::string workload;
  std::string spec;  // canonical JSON text
  std::string created_at;
  int64_t points = 0;  // in the full expansion (all shards)
};

// One finished sweep point.
struct SweepPointRecord {
  int64_t id = 0;
  int64_t sweep_id = 0;
  int64_t index = 0;  // in the sweep's expansion
  std::string key;    // "mode=train batch=64 nodes=32"
  std::string mode;
  nlohmann::ordered_json params;  // grid key -> value (numbers where the value is one)
  std::string status;             // ok, nan_loss, out_of_memory, error, timeout
  std::string message;
  int64_t run_id = 0;              // the run behind it (0: none)
  int64_t memory_id = 0;           // its memory pass when measured (0: none)
  int64_t profile_id = 0;          // its operator profile when measured (0: none)
  nlohmann::ordered_json metrics;  // examples_per_s, flops_per_s, flop_utilization ...
  double warmup_s = 0, measure_s = 0, wall_s = 0;
  std::string shard;  // "i/n"
  std::string finished_at;
};

struct MergeReport {
  int sweeps_added = 0;
  int points_added = 0;
  int points_already_present = 0;
};

}  // namespace plumb::store
