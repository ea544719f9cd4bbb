// A `plumb serve` session and its measurements as the store holds them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "plumb/platform/environment.h"
#include "plumb/run/run_result.h"
#include "plumb/run/serving_loop.h"  // QueryTimes: a session's queries, loaded apart

namespace plumb::store {

// One measurement of a `plumb serve` session (schema v10): a scenario served once, its summary;
// the per-query times are loaded apart (load_serve_queries).
struct StoredServeMeasurement {
  int64_t id = 0;
  std::string role;  // "single-stream", "offline", "server", "trial"
  // NaN when not defined (offered rate outside Server; a percentile the queries cannot bound).
  double offered_qps = 0, achieved_qps = 0;
  int64_t queries = 0, over_bound = 0, largest_batch = 0;
  double tail_s = 0, tail_low_s = 0, tail_high_s = 0;  // at the session's percentile
  double p50_s = 0, p90_s = 0, p99_s = 0, p999_s = 0;
  std::string verdict;  // the bound at the percentile: met, missed, undecided
  double queueing_share = 0, mean_batch = 0;
};

// One `plumb serve` invocation (schema v10).
struct StoredServeSession {
  int64_t id = 0;
  std::string started_at, workload, scenario, dtype, setting, tag, command;
  int threads = 1, workers = 1;
  double bound_s = 0, percentile = 0.99, max_wait_s = 0;
  int64_t max_batch = 1;
  bool fixed_batch = false, searched = false, reachable = true;
  double found_qps = 0, failed_qps = 0;  // NaN unless a search ran
  run::RunStatus status = run::RunStatus::kOk;
  std::string message;
  platform::Environment environment;
  nlohmann::ordered_json document;  // batch sizes, service times, defaults, notes (docs/serving.md)
  std::vector<StoredServeMeasurement> measurements;  // in the order served
};

// A session's measurement of one role ("single-stream", "offline", "server"), or null.
const StoredServeMeasurement* serve_measurement(const StoredServeSession& session,
                                                const std::string& role);
// The measurement behind the session's Server figure: the trial at the found rate of a search,
// or the run at the given rate; null when there is none.
const StoredServeMeasurement* serve_found_measurement(const StoredServeSession& session);
// True when no rate tried above the found one missed the bound: the upper end of the search's
// bracket is then the Offline ceiling (no rate beyond it can be sustained), not a measured miss.
bool serve_bracket_is_ceiling(const StoredServeSession& session);

}  // namespace plumb::store
