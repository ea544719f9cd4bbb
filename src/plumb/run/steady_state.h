// Warm-up detection from iteration times themselves (TBD: "throughput stabilizes after
// several hundred iterations"; a fixed warm-up count is either wasteful or wrong).
//
// The test looks at the last three consecutive windows of `window` iterations. The series is
// steady when (a) the medians of the three windows agree within a tolerance, and (b) they show
// no monotone trend whose total change exceeds half of rel_tolerance. The tolerance is the larger
// of `rel_tolerance` and a noise allowance derived from the robust spread of the windows, so heavy
// but stationary noise does not block detection, while a step change or a drift larger than the
// noise does.
#pragma once

#include <cstddef>
#include <vector>

namespace plumb::run {

struct SteadyStateOptions {
  size_t window = 5;            // iterations per window; three windows are compared
  double rel_tolerance = 0.03;  // medians may differ by this fraction of the overall median
  double noise_z = 3.0;         // noise allowance: z * sigma_robust / sqrt(window)
};

// True when the tail of `series` (seconds per iteration, in order) looks stationary.
// Needs at least 3 * window samples; fewer is never steady.
bool tail_is_steady(const std::vector<double>& series, const SteadyStateOptions& options);

// Feeding `series` one sample at a time (as the runner does), the number of samples seen when
// the tail first tests steady; series.size() + 1 if it never does.
size_t first_steady_index(const std::vector<double>& series, const SteadyStateOptions& options);

}  // namespace plumb::run
