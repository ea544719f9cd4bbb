// plumb serve on a generative workload: requests of prompt and output tokens (request_stream.h)
// arriving open-loop at a rate (gamma arrivals; burstiness 1 = Poisson) and served by a scheduler
// (token_scheduler.h: static, or continuous with prefill-first or chunked prefill) on the model's
// slotted KV cache, in MLPerf's LLM scenarios: Offline (every request waiting at the start: the
// token throughput ceiling), Server at a given rate, and Server without one (the highest rate
// whose TTFT and TPOT both hold at the percentile: the one-shot server's rate search,
// rate_search.h). Every request's times and every engine iteration are kept.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "plumb/core/workload.h"
#include "plumb/run/request_stream.h"
#include "plumb/run/run_result.h"
#include "plumb/run/runner.h"
#include "plumb/run/serve_session.h"
#include "plumb/run/token_metrics.h"
#include "plumb/run/token_scheduler.h"

namespace plumb::run {

// A generative request takes seconds, so a p99 trial's 299 requests arrive at a few per second:
// the search tries rates down to the one whose trial would take this long to arrive (one-shot
// serving stops at kMaxServerTrialS).
inline constexpr double kMaxTokenTrialS = 600;

struct TokenServeOptions {
  RunOptions run;  // inference; threads, dtype, seed, config
  Scenario scenario = Scenario::kServer;
  double rate = 0;             // Server at this request rate; 0: search for the highest that holds
  double burstiness = 1;       // gamma arrivals' shape: 1 Poisson, below 1 burstier
  SchedulerOptions scheduler;  // kv_budget_bytes 0: every slot's whole allocation
  LengthMix mix;
  TokenBounds bounds;
  // Bounds the user did not give are the defaults, scaled up where this machine cannot keep them
  // for a request served alone.
  bool ttft_given = false, tpot_given = false;
  double duration_s = 10;    // each measurement offers requests for at least this long
  double resolution = 0.05;  // the search stops when its bracket is this narrow
};

// The session's identity (setting_identity.h): the run setting, --scenario, --scheduler, --chunk,
// --max-batch, --max-wait (static), --kv-budget, the lengths, --burstiness, --qps and the bounds
// at their percentile; --duration and --resolution shape the measurement only.
Setting token_serve_setting(const Workload& workload, const TokenServeOptions& options);

// Throws UsageError for a bound, rate, burstiness, batch, chunk, duration or percentile out of
// range, and for a scenario a token-level server does not have (single-stream), naming the flag.
void validate_token_serve_options(const TokenServeOptions& options);

// Throws UsageError, before any model is built, when a request of the options' lengths can never
// be served by the workload (from its transformer shape): beyond its context, or above the KV
// budget at the run's precision.
void check_requests_fit(const Workload& workload, const TokenServeOptions& options);

struct TokenScenarioRun {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  std::string role;  // "offline", "server" (a given rate), "trial"
  double offered_rate = kNaN;
  TokenRunSummary summary;
  TokenServeTrace trace;
};

struct TokenServeResult {
  RunStatus status = RunStatus::kOk;
  std::string message;
  std::string started_at;
  std::vector<std::string> warnings, precision_notes;
  TokenBounds bounds;                    // as applied (scaled where the defaults could not hold)
  std::vector<std::string> bound_notes;  // why a default bound was scaled
  int64_t kv_bytes_per_position = 0, slot_positions = 0, kv_budget_bytes = 0;
  // A request served alone, warm: the prefill of the longest prompt, a decode iteration of one
  // request, and one of a full batch.
  double lone_ttft_s = 0, lone_tpot_s = 0, full_batch_tpot_s = 0;
  std::vector<TokenScenarioRun> runs;  // in the order served
  bool searched = false;
  bool reachable = true;  // false: a request alone misses a bound
  double found_rate = 0, failed_rate = 0;
  int found_run = -1;  // index in runs of the trial at found_rate
};

TokenServeResult serve_generative(const Workload& workload, const TokenServeOptions& options,
                                  const ProgressFn& progress = {});

// The default bound scaled to this machine: `bound` when a lone request's figure leaves it four
// times headroom, else four times that figure rounded up to two significant digits.
double scaled_bound(double bound_s, double lone_s);

}  // namespace plumb::run
