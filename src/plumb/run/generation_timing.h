// Turning the timed generations of a run's measured steps (core/generation.h) into its TTFT,
// TPOT and inter-token statistics and its prefill and decode token rates.
#pragma once

#include <cstdint>
#include <vector>

#include "plumb/core/generation.h"
#include "plumb/run/run_result.h"

namespace plumb::run {

// An empty record for a model's generations: its sizes and its cache's bytes.
GenerationTimes generation_times_for(GenerativeModel& model);

// Adds one measured step's generation (its prefill and its decode calls).
void add_generation(GenerationTimes& times, const GenerationTrace& trace);

// Per-step mean decode call of `decode_s`, which holds gen - 1 calls per step in order.
std::vector<double> per_step_tpot(const std::vector<double>& decode_s, int64_t gen);

// Fills the statistics and rates from the samples (also after a store read them back).
void summarize_generation(GenerationTimes& times);

}  // namespace plumb::run
