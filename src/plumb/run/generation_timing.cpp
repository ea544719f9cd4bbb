// TTFT, TPOT and token rates of a generative run (see generation_timing.h).
#include "plumb/run/generation_timing.h"

#include <numeric>

#include "plumb/core/errors.h"
#include "plumb/run/stats.h"

namespace plumb::run {

GenerationTimes generation_times_for(GenerativeModel& model) {
  const GenerationShape shape = model.generation_shape();
  GenerationTimes times;
  times.batch = shape.batch;
  times.prompt = shape.prompt;
  times.gen = shape.gen;
  times.kv_cache_bytes = static_cast<double>(model.kv_cache_bytes());
  return times;
}

void add_generation(GenerationTimes& times, const GenerationTrace& trace) {
  PLUMB_ASSERT(static_cast<int64_t>(trace.decode_s.size()) == times.gen - 1,
               "a generation makes gen - 1 decode calls");
  times.ttft_s.push_back(trace.prefill_s);
  times.decode_s.insert(times.decode_s.end(), trace.decode_s.begin(), trace.decode_s.end());
}

std::vector<double> per_step_tpot(const std::vector<double>& decode_s, int64_t gen) {
  std::vector<double> tpot;
  if (gen < 2) return tpot;  // one output token: no decode call, no time per output token
  const auto calls = static_cast<size_t>(gen - 1);
  for (size_t first = 0; first + calls <= decode_s.size(); first += calls)
    tpot.push_back(
        std::accumulate(decode_s.begin() + first, decode_s.begin() + first + calls, 0.0) /
        static_cast<double>(calls));
  return tpot;
}

void summarize_generation(GenerationTimes& times) {
  times.ttft = summarize(times.ttft_s);
  times.tpot = summarize(per_step_tpot(times.decode_s, times.gen));
  times.inter_token = summarize(times.decode_s);
  times.prefill_tokens_per_s = static_cast<double>(times.batch * times.prompt) / times.ttft.mean;
  times.decode_tokens_per_s = static_cast<double>(times.batch) / times.tpot.mean;
}

}  // namespace plumb::run
