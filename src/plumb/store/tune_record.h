// One `plumb tune` call as the store holds it.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "plumb/platform/environment.h"
#include "plumb/store/tune_result.h"

namespace plumb::store {

// One `plumb tune` call (schema v11): the headline columns, and the whole report as `plumb tune
// --json` prints it (docs/tuning.md). The stock and best runs are stored runs (ids in it).
struct StoredTuneSession {
  int64_t id = 0;
  std::string started_at, workload, mode, tag;
  int64_t batch = 0;
  int threads = 0;
  bool found = false;  // a best configuration within the bounds was found and measured
  double speedup = 0, speedup_low = 0, speedup_high = 0;  // best over stock; NaN when not found
  std::string best_command;
  platform::Environment environment;
  TuneResult result;  // stored as the document `plumb tune --json` prints (tune_result.h)
};

}  // namespace plumb::store
