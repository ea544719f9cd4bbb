// Time-keeping every layer shares: durations on the steady clock (what plumb measures and
// budgets), the timeline's nanosecond base, wall-clock stamps for stored records and the
// process's CPU time. Kept apart from the measuring loop so that the store and the platform
// probes can stamp and time without depending on the runner.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace plumb {

// Seconds on the steady clock since `start` (every duration plumb measures or budgets).
double seconds_since(std::chrono::steady_clock::time_point start);

// The steady clock in nanoseconds: the time base of the op and allocation timelines. Inline:
// the profilers call it at every operator's start and end.
inline int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// "2026-11-26T06:35:38Z": when a record was made.
std::string utc_now_iso8601();

// User plus system CPU seconds of this process so far (all threads).
double process_cpu_seconds();

}  // namespace plumb
