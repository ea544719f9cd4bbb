// What a measured sweep point stores besides its records (docs/json.md, sweep points): the
// metrics the sweep analyses regress on and draw, and the point's status.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "plumb/analysis/roofline.h"
#include "plumb/core/outcome.h"
#include "plumb/profile/sweep_point.h"

namespace plumb::analysis {

// examples_per_s, throughput, the median and mean step, FLOP/s and its share of the roof of the
// point's own precision (null without ceilings or a roof for it), parameters; the memory
// pass's peaks per category; the observed step's category shares, bytes and intensity. Only
// what was measured (a failed run: an empty object).
nlohmann::ordered_json sweep_point_metrics(const profile::SweepPointMeasurement& point,
                                           const std::optional<Ceilings>& ceilings);

// The run's outcome, unless it succeeded but the point took longer than `point_time_limit_s`
// (0: no limit): then a timeout whose measurements are kept.
Outcome sweep_point_status(const profile::SweepPointMeasurement& point, double point_time_limit_s);

}  // namespace plumb::analysis
