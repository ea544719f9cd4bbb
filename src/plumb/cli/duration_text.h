// Durations as users type them for latency bounds, waits and budgets: "20ms", "2 ms", "1.5s",
// "500us", "5m".
#pragma once

#include <string>

namespace plumb::cli {

// Seconds. The unit is required (a bare "20" could mean ms or s); us, ms, s, m (or min) and h,
// optional space. Throws UsageError naming `option` for anything else and for a duration that is
// not positive.
double parse_duration_s(const std::string& option, const std::string& text);

}  // namespace plumb::cli
