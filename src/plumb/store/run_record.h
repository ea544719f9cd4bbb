// A run as the store holds it, and what every stored record says about what ran where.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "plumb/core/dtype.h"
#include "plumb/platform/environment.h"
#include "plumb/run/run_result.h"

namespace plumb::store {

// What every stored record (run or profile) says about what was executed, and where.
struct StoredRecord {
  int64_t id = 0;
  std::string workload;
  std::string mode;  // "train" | "infer"
  int64_t batch = 0;
  int threads = 0;
  std::string device;
  Dtype dtype = Dtype::kFp32;  // precision and memory format it ran in (schema v7; fp32 before)
  std::string memory_format = "contiguous";
  std::string engine = "onednn";  // execution settings (schema v11; onednn and keep before)
  std::string heap = "keep";
  std::string tag;
  nlohmann::ordered_json config;  // resolved workload config
  platform::Environment environment;
};

// A run as read back from the store.
struct StoredRun : StoredRecord {
  int64_t warmup_iterations = 0;  // known even when samples are not loaded
  run::RunResult result;          // samples empty unless loaded with samples
};

}  // namespace plumb::store
