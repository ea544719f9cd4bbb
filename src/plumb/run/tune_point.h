// The points of a tuning space and what a short trial of one measured: the vocabulary the
// trials (run/tune_trials.h) measure in and the search (analysis/tune_search.h) ranks in. Here,
// in run/, because the trials are run code and the search, above them, only reads outcomes.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "plumb/core/outcome.h"

namespace plumb::run {

// One factor of the space; values as text, value 0 being the stock configuration's.
struct TuneFactor {
  std::string name;
  std::vector<std::string> values;
};

using TunePoint = std::vector<size_t>;  // a value index per factor; all zeros: stock

// "dtype=bf16 memory_format=channels_last": the factors where `point` differs from stock, or
// "stock".
std::string point_text(const std::vector<TuneFactor>& factors, const TunePoint& point);

// Not ok: kTimeout when the budget's deadline came first (reason kNotReached), else the run's
// own failure state and message.
struct TrialOutcome {
  Outcome outcome = Outcome::failure(OutcomeState::kError, "");
  std::string note;       // why an ok trial took fewer steps (cut as hopeless)
  double throughput = 0;  // units/s over the timed steps
  double step_s = 0;      // mean timed step, seconds
  size_t steps = 0;       // timed steps taken (fewer than asked when the trial was cut short)
  double seconds = 0;     // wall time of the trial, building and warm-up included
};

}  // namespace plumb::run
