// plumb serve's measurement: a workload's inference step behind the serving engine
// (serving_loop.h), in MLPerf LoadGen's scenarios — SingleStream (one query at a time: the
// latency floor), Offline (every query waiting: the throughput ceiling) and Server (Poisson
// arrivals at a rate: the tail latency a service sees; without a rate, the largest rate that
// keeps a tail-latency bound, rate_search.h).
//
// The batcher forms batches of any size up to max_batch; the model runs each at the smallest
// prepared size that holds it (powers of two below max_batch, and max_batch), so a batch of 5 runs
// as 8 with 3 empty places, as a serving system with fixed shapes does. A workload whose batch is
// fixed by its configuration (Model::make_batch_of) is served at that one size, padded.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "plumb/core/workload.h"
#include "plumb/run/latency_percentiles.h"
#include "plumb/run/rate_search.h"
#include "plumb/run/run_result.h"
#include "plumb/run/runner.h"
#include "plumb/run/serving_loop.h"

namespace plumb::run {

enum class Scenario { kSingleStream, kServer, kOffline };
std::string scenario_name(Scenario scenario);  // "single-stream", "server", "offline"
// Throws UsageError naming the scenarios for anything else.
Scenario parse_scenario(const std::string& text);

struct ServeOptions {
  RunOptions run;  // mode infer; threads per worker; dtype, memory format, seed, config
  Scenario scenario = Scenario::kServer;
  double rate_qps = 0;  // Server at this arrival rate; 0: search for the largest that holds
  double bound_s = 0;   // the tail-latency bound
  double percentile = 0.99;
  BatchPolicy policy;
  int workers = 1;
  double duration_s = 10;    // each measurement serves at least this long (and enough queries)
  double resolution = 0.05;  // the search stops when its bracket is this narrow
};

// The session's identity (setting_identity.h): the run setting (serving is inference: no
// --mode), then --scenario, the bound at its percentile (--p99 20ms), --max-batch, --max-wait,
// --workers and --qps; --duration and --resolution shape the measurement, not what it measured.
// Printed as the reproducer it is the session's command; canonical, its key (plumb compare).
Setting serve_setting(const Workload& workload, const ServeOptions& options);

// A serve session's setting of either kind: the run setting with `own` fields, then --duration and
// --resolution (how it was measured, not what), without --mode (serving is inference).
Setting serve_command_setting(const Workload& workload, const RunOptions& run,
                              std::vector<SettingField> own, double duration_s, double resolution);

// Throws UsageError "FLAG must be a positive WHAT, got V" unless v is positive and finite.
void require_positive(double v, const char* flag, const char* what);

// Throws UsageError for a bound, rate, wait, batch, duration, worker count or percentile out of
// range, naming the flag.
void validate_serve_options(const ServeOptions& options);

// One served measurement.
struct ScenarioRun {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  std::string role;           // "single-stream", "offline", "server" (a given rate), "trial"
  double offered_qps = kNaN;  // Server: the arrival rate
  double achieved_qps = 0;    // queries / (last finish - first arrival)
  std::vector<QueryTimes> queries;
  TailCheck check;          // the bound at the percentile
  PercentileEstimate tail;  // latency at the percentile, with its interval
  double p50_s = kNaN, p90_s = kNaN, p99_s = kNaN, p999_s = kNaN;
  double queueing_share = kNaN;  // mean queueing / mean latency
  double mean_batch = 0;         // queries per batch, averaged over queries
  int64_t largest_batch = 0;
};

// Summarises served queries (role and rate are the caller's).
ScenarioRun summarize_queries(std::vector<QueryTimes> queries, double percentile, double bound_s);

// How large the batcher's batches may grow, from each prepared size's warm service time. Offline:
// the size with the most queries per second of service (within 2% of the best, the larger). A
// server stops there too (a larger batch costs latency and throughput both), and lower while that
// size's service time is more than half of the bound less the wait: near saturation a query
// waits for the batch in service and is then served in the next, two service times.
struct BatchLimits {
  int64_t offline_batch = 1, server_batch = 1;
};
BatchLimits batch_limits(const std::vector<int64_t>& sizes, const std::vector<double>& service_s,
                         double bound_s, double max_wait_s);

struct ServeResult {
  RunStatus status = RunStatus::kOk;
  std::string message;
  std::string started_at;
  std::vector<std::string> warnings, precision_notes;
  std::vector<int64_t> batch_sizes;  // the sizes the model runs (padded up to)
  std::vector<double> service_s;     // median step time per size, after warm-up
  bool fixed_batch = false;          // the workload cannot resize its batch: padded to one size
  int64_t max_batch = 0;             // --max-batch as applied (a fixed batch: the model's)
  // Offline batches: the prepared size up to max_batch that serves the most queries per second.
  int64_t offline_batch = 0;
  // The server batcher's limit: offline_batch, or smaller (batch_limits()).
  int64_t batch_limit = 0;
  std::vector<ScenarioRun> runs;  // in the order served
  // Server without a rate:
  bool searched = false;
  bool reachable = true;  // false: one query alone misses the bound
  double found_qps = 0;   // the highest rate that held (0: none)
  double failed_qps = 0;  // the lowest rate above it that did not
  int found_run = -1;     // index in runs of the measurement at found_qps
};

ServeResult serve_workload(const Workload& workload, const ServeOptions& options,
                           const ProgressFn& progress = {});

// Copies what the model's run says about itself (status, message, warnings first, precision
// notes) into a serve result of either kind.
template <typename Result>
void take_run_outcome(const RunResult& run, Result& result) {
  result.status = run.status;
  result.message = run.message;
  result.warnings.insert(result.warnings.begin(), run.warnings.begin(), run.warnings.end());
  result.precision_notes = run.precision_notes;
}

}  // namespace plumb::run
