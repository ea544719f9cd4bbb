// JSON numbers for plumb's documents: an undefined statistic (NaN, infinity) is null, never a
// made-up 0 and never invalid JSON.
#pragma once

#include <cmath>

#include <nlohmann/json.hpp>

namespace plumb {

inline nlohmann::ordered_json json_number(double x) {
  return std::isfinite(x) ? nlohmann::ordered_json(x) : nlohmann::ordered_json(nullptr);
}

}  // namespace plumb
