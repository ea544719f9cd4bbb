// A `plumb serve` session and its measurements as the store holds them.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "plumb/platform/environment.h"
#include "plumb/run/run_result.h"
#include "plumb/run/serving_loop.h"     // QueryTimes: a session's queries, loaded apart
#include "plumb/run/token_scheduler.h"  // RequestTrace, IterationRecord: a token session's, apart

namespace plumb::store {

// One request of a token-level measurement as stored (its token times are summarised by the
// measurement's inter-token percentiles; token_s stays empty when loaded).
using StoredServeRequest = run::RequestTrace;

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

  // A token-level measurement (a generative workload, schema v16); NaN / 0 / "" otherwise. Its
  // `queries` count requests, offered and achieved rates are requests per second, `verdict`
  // is both bounds' (run::both_verdicts), tail_* and p50..p999 are the end-to-end latency's, and
  // mean_batch, largest_batch the decode iterations' batch.
  int64_t output_tokens = 0, good = 0;
  double output_token_rate = NAN, goodput_rate = NAN;
  double ttft_tail_s = NAN, ttft_low_s = NAN, ttft_high_s = NAN;  // at the percentile
  double ttft_p50_s = NAN, ttft_p90_s = NAN, ttft_p99_s = NAN;
  int64_t ttft_over = 0;
  std::string ttft_verdict;
  double tpot_tail_s = NAN, tpot_low_s = NAN, tpot_high_s = NAN;
  double tpot_p50_s = NAN, tpot_p90_s = NAN, tpot_p99_s = NAN;
  int64_t tpot_over = 0;
  std::string tpot_verdict;
  double itl_p50_s = NAN, itl_p99_s = NAN, queueing_mean_s = NAN;
  int64_t peak_kv_reserved_bytes = 0, peak_kv_used_bytes = 0;
};

// One `plumb serve` invocation (schema v10).
struct StoredServeSession {
  int64_t id = 0;
  std::string started_at, workload, scenario, dtype, setting, tag, command;
  int threads = 1, workers = 1;
  double bound_s = 0, percentile = 0.99, max_wait_s = 0;
  int64_t max_batch = 1;
  bool fixed_batch = false, searched = false, reachable = true;
  // "query" (a one-shot model: a query is one inference) or "token" (a generative model served
  // token by token, schema v16). For a token session bound_s is the TTFT bound, tpot_bound_s the
  // TPOT bound (both at `percentile`), max_batch the running requests at most, and the rates
  // below are requests per second.
  std::string kind = "query";
  std::string scheduler;  // token: "static", "continuous"
  int64_t chunk_tokens = 0, kv_budget_bytes = 0;
  double tpot_bound_s = NAN, burstiness = NAN;
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
