// What a token-level serving run measured, from its trace (token_scheduler.h): per request TTFT,
// TPOT, inter-token latencies, end-to-end latency and queueing; per run the request and output-
// token throughput, the tails of TTFT and TPOT at the bounds' percentile with their order-
// statistic intervals and verdicts (latency_percentiles.h, the rule plumb serve applies to every
// tail), the goodput (requests per second that met both bounds) and the engine's batch and KV
// occupancy over the iterations.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "plumb/run/latency_percentiles.h"
#include "plumb/run/token_scheduler.h"

namespace plumb::run {

// The latency bounds a token-level service promises (MLPerf's LLM Server scenario: both at p99).
struct TokenBounds {
  double ttft_s = 2.0;
  double tpot_s = 0.2;
  double percentile = 0.99;
};

// One latency over a run's requests.
struct LatencyTail {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  PercentileEstimate tail{kNaN, kNaN, kNaN, 0};  // at the bounds' percentile, with its interval
  TailCheck check;                               // the bound at that percentile
  double p50_s = kNaN, p90_s = kNaN, p99_s = kNaN;
};

struct TokenRunSummary {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  size_t requests = 0;
  int64_t output_tokens = 0;
  double duration_s = 0;                                 // first arrival to last completion
  double request_rate = kNaN, output_token_rate = kNaN;  // per second over the duration
  LatencyTail ttft, tpot;                     // TPOT over requests of two or more output tokens
  double itl_p50_s = kNaN, itl_p99_s = kNaN;  // every gap between a request's tokens
  double e2e_p50_s = kNaN, e2e_p99_s = kNaN;
  double queueing_mean_s = kNaN;
  TailVerdict verdict = TailVerdict::kUndecided;  // both bounds: met, missed or undecided
  size_t good = 0;                                // requests within both bounds
  double goodput_rate = kNaN;                     // good / duration
  double mean_decode_batch = kNaN;  // requests per decode iteration, averaged over them
  int64_t largest_decode_batch = 0;
  int64_t peak_kv_reserved_bytes = 0, peak_kv_used_bytes = 0;
};

// Met when both are met, missed when either is missed, undecided otherwise.
TailVerdict both_verdicts(TailVerdict a, TailVerdict b);

TokenRunSummary summarize_token_trace(const TokenServeTrace& trace, const TokenBounds& bounds);

}  // namespace plumb::run
