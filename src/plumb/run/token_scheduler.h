// The schedulers of a token-level server: requests (request_stream.h) served by a generative
// model's slotted KV cache (core/slot_generation.h) on a clock (serve_clock.h), one engine
// iteration at a time, every request's token times and every iteration recorded.
//
// Static batching (request-level scheduling): when the engine is idle it takes the requests that
// have arrived, up to max_batch and the KV budget (holding the oldest up to max_wait for others
// to join, as plumb's one-shot batcher), prefills each, then decodes all of them together until
// the longest is done; a request completes with its batch, as request-level schedulers return
// results (Orca, OSDI 2022, section 2.3). Its rows are padded: each reserves the KV of the
// batch's longest prompt plus its longest output.
//
// Continuous batching (iteration-level scheduling, Orca; vLLM): before every iteration, waiting
// requests are admitted in arrival order while a slot is free and the KV budget holds their
// whole prompt + output; a finished request leaves after the iteration that produced its last
// token. Prefill policy: prefill-first (an iteration with new requests runs their whole prompts
// and no decode, vLLM's default before chunking) or chunked (every iteration decodes all running
// requests and fills the rest of a token budget with prompt chunks in arrival order, Sarathi-
// Serve's rule).
//
// Token times: a token is emitted when the iteration that produced it ends. TTFT = first token -
// arrival; TPOT = (completion - first token) / (output - 1), MLPerf's definition; inter-token
// latencies are the gaps between a request's emitted tokens.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "plumb/core/slot_generation.h"
#include "plumb/run/request_stream.h"
#include "plumb/run/serve_clock.h"

namespace plumb::run {

enum class SchedulerKind { kStatic, kContinuous };
std::string scheduler_name(SchedulerKind kind);  // "static", "continuous"
// Throws UsageError naming the schedulers for anything else.
SchedulerKind parse_scheduler(const std::string& text);

struct SchedulerOptions {
  SchedulerKind kind = SchedulerKind::kContinuous;
  int64_t max_batch = 16;  // requests running at once (cache slots)
  double max_wait_s = 0;   // static: how long the oldest waiting request waits for a batch to fill
  int64_t chunk_tokens = 0;  // continuous: 0 = prefill-first; else tokens per iteration (chunked)
  int64_t kv_budget_bytes = 0;  // reserved KV bytes at most (> 0)
};

// Throws UsageError when a request of `mix` can never be served under `options` by a model of
// `max_positions` positions at `kv_bytes_per_position`: more positions than the model takes, more
// KV bytes than the budget (naming both sizes), or a chunk budget below the batch (its decodes
// alone would exceed it).
void check_admissible(const SchedulerOptions& options, int64_t kv_bytes_per_position,
                      int64_t max_positions, const LengthMix& mix);

// The positions each slot is allocated: the longest prompt plus the longest output of the mix
// (a static batch's padded rows reach that far).
int64_t slot_positions(const LengthMix& mix);

// One request as served; times in seconds from the start of the run.
struct RequestTrace {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  double arrival_s = 0;
  double admitted_s = kNaN;     // when it was given a slot (its batch started, under static)
  double first_token_s = kNaN;  // when its first output token was emitted
  double finish_s = kNaN;       // when it completed
  int64_t prompt = 0, output = 0;
  std::vector<double> token_s;  // when each output token was emitted (output entries)

  double ttft_s() const { return first_token_s - arrival_s; }
  // NaN for a one-token request (no token after the first).
  double tpot_s() const;
  double latency_s() const { return finish_s - arrival_s; }
  double queueing_s() const { return admitted_s - arrival_s; }
};

// One engine iteration: what ran and what the cache held when it ended.
struct IterationRecord {
  double start_s = 0, end_s = 0;
  int32_t decode_batch = 0;       // requests that decoded a token (static: padded rows included)
  int32_t prefill_tokens = 0;     // prompt tokens run
  int32_t running = 0;            // requests holding a slot during the iteration
  int32_t waiting = 0;            // arrived, not yet admitted, when it started
  int64_t kv_reserved_bytes = 0;  // KV reserved by the requests holding a slot
  int64_t kv_used_bytes = 0;      // KV positions written, in bytes
};

struct TokenServeTrace {
  std::vector<RequestTrace> requests;  // in arrival order
  std::vector<IterationRecord> iterations;
};

// Serves `requests` (ascending arrivals, each within `positions`) on `engine`, whose slots it
// allocates first: max_batch slots, plus one to swap through, of `positions` positions.
TokenServeTrace serve_token_requests(const std::vector<TokenRequest>& requests,
                                     const SchedulerOptions& options, int64_t positions,
                                     SlottedGenerator& engine, ServeClock& clock);

}  // namespace plumb::run
