// What a runner call is asked to do and what it produced. The store persists these as they
// are; analysis reads them back from the store, never from a live runner.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "plumb/core/config.h"
#include "plumb/core/execution_settings.h"
#include "plumb/core/mode.h"
#include "plumb/core/outcome.h"
#include "plumb/core/precision.h"
#include "plumb/run/stats.h"
#include "plumb/run/steady_state.h"

namespace plumb::run {

// A run ends in an outcome state (core/outcome.h) other than kTimeout, which only a sweep point
// (a run over its point_time_limit) has.
using RunStatus = OutcomeState;
inline const char* status_name(RunStatus status) {
  return outcome_state_name(status);
}
// The inverse of status_name for a run's states, for names read back (the store, a worker's
// result); nullopt for any other name, "timeout" included.
std::optional<RunStatus> status_from_name(const std::string& name);
// A run's states, in the order of the enum (store CHECK constraints and parsing use it).
const std::vector<RunStatus>& all_statuses();

struct RunOptions {
  std::string workload;
  Mode mode = Mode::kTrain;
  Config config;               // fully resolved, "batch" included
  int threads = 1;             // intra-op threads
  std::string device = "cpu";  // "cpu" or "cuda[:N]"
  Dtype dtype = Dtype::kFp32;  // applied by the runner to any workload (precision_session.h)
  MemoryFormat memory_format = MemoryFormat::kContiguous;
  Engine engine = Engine::kOnednn;      // convolution / GEMM path (execution_settings.h)
  HeapPolicy heap = HeapPolicy::kKeep;  // what malloc does with freed memory (heap_policy.h)
  // int8 only: module paths ("layer1.0.conv1") kept in fp32 (selective quantization).
  std::vector<std::string> keep_fp32;
  int embedding_bits = 8;  // int8 only: row-wise bits of quantized embedding bags (8 or 4)
  uint64_t seed = 0;
  double target_ci = 0.02;         // stop when ci_rel <= this ...
  size_t min_samples = 10;         // ... and at least this many samples are taken
  double max_time_s = 60;          // measurement budget (warm-up has its own cap)
  size_t max_iterations = 100000;  // measurement iteration budget
  double max_warmup_s = 60;        // warm-up cap in seconds
  size_t max_warmup_iterations = 200;
  SteadyStateOptions steady;
};

// A generative workload's inference run (core/generation.h), phase by phase: each measured
// step's time to first token (its prefill call) and every decode call after it. The step time
// of such a run is the sum of its calls, so a step's TTFT and its decode calls add up to it.
struct GenerationTimes {
  int64_t batch = 0, prompt = 0, gen = 0;  // requests, prompt tokens and output tokens each
  double kv_cache_bytes = 0;               // the cache the model allocates for one generation
  std::vector<double> ttft_s;              // per measured step: its prefill call, seconds
  std::vector<double> decode_s;            // every decode call of the measured steps, in order
  // Statistics (generation_timing.h): ttft of ttft_s; tpot of the steps' mean decode call
  // (time per output token, MLPerf's and vLLM's definition: (step - TTFT) / (gen - 1));
  // inter_token of decode_s, the distribution of single token latencies.
  Summary ttft, tpot, inter_token;
  double prefill_tokens_per_s = Summary::kNaN;  // batch * prompt / mean TTFT
  double decode_tokens_per_s = Summary::kNaN;   // batch / mean TPOT
};

struct RunResult {
  RunStatus status = RunStatus::kOk;
  std::string message;            // why, when status != ok
  std::string command;            // plumb command line that reproduces this run
  std::string started_at;         // ISO 8601 UTC
  double wall_seconds = 0;        // whole run, warm-up included
  std::vector<double> warmup_s;   // every warm-up iteration, seconds
  std::vector<double> samples_s;  // every measured iteration, seconds
  bool steady_detected = false;   // false: warm-up hit its cap
  bool target_met = false;        // ci_rel <= target_ci at the end
  Summary step_time;              // of samples_s
  double units_per_step = 0;      // e.g. images per batch
  std::string throughput_unit;    // "images/s" ...
  double throughput = 0;          // units_per_step / mean step time
  double last_loss = 0;           // train: last loss; infer: output summary
  double cpu_utilization = 0;     // process CPU time / (wall time x threads), measurement only
  // Milliseconds added to every step on purpose (the PLUMB_INJECT_STEP_DELAY_MS testing aid);
  // a run with a delay is never a real measurement of its workload.
  double injected_delay_ms = 0;
  std::vector<std::string> warnings;
  std::vector<std::string> precision_notes;   // what ran in which precision (precision_session.h)
  std::vector<std::string> quantized_layers;  // int8: module paths run in int8 (not stored)
  // Generative workloads in inference only: the phases of the measured steps.
  std::optional<GenerationTimes> generation;
};

}  // namespace plumb::run
