// What plumb serve assumes for a workload when the user does not say: the tail-latency bound and
// percentile, the largest batch the batcher may form and how long it holds a query for others.
// Taken from the Facebook inference study's Table 1 where it gives a constraint (recommendation
// and translation: tens of milliseconds; computer vision: none strict) and from the domain's
// MLPerf Inference server bound otherwise; printed with their source, and every one overridable.
#pragma once

#include <cstdint>
#include <string>

#include "plumb/core/workload.h"

namespace plumb::run {

struct ServeDefaults {
  double bound_s = 0;
  double percentile = 0.99;
  int64_t max_batch = 1;
  double max_wait_s = 0;
  std::string source;  // one line: where the bound and batch come from
};

ServeDefaults serve_defaults(const WorkloadInfo& info);

// A generative workload's defaults: MLPerf Inference's LLM Server bounds (Llama-2-70B: TTFT 2 s,
// TPOT 200 ms, both at p99), 16 running requests, and CPU-sized requests (prompts 16-128 and
// outputs 16-64 tokens, uniform: MLPerf's OpenOrca requests are several times longer).
struct TokenServeDefaults {
  double ttft_s = 2.0, tpot_s = 0.2, percentile = 0.99;
  int64_t max_batch = 16;
  std::string prompt_tokens = "16-128", output_tokens = "16-64";
  std::string source =
      "MLPerf Inference LLM Server (Llama-2-70B): p99 TTFT <= 2 s, p99 TPOT <= 200 ms; requests "
      "sized for a CPU";
};

// The batcher's default wait for a bound: 5% of it, long enough to fill a batch at high load,
// short against the bound at low load.
double default_max_wait_s(double bound_s);

}  // namespace plumb::run
