// How much CPU other processes take just before a measurement. The 1-minute load average
// cannot say: it still counts a run that ended seconds ago, so on 2 cores every run of an
// interleaved series (A B A B ...) would start at "load 1.0" and be flagged as noisy. plumb
// instead samples the kernel's CPU counters (/proc/stat) over a short window and subtracts
// its own CPU time, which leaves the cores' worth of work done by everything else.
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace plumb::platform {

// Busy CPU time summed over all cores since boot (user + nice + system + irq + softirq), in
// seconds, from the aggregate "cpu " line of /proc/stat's text; nullopt when the text has no
// such line or it is malformed.
std::optional<double> parse_busy_seconds(const std::string& proc_stat, long ticks_per_second);

// Cores' worth of CPU time used by other processes between two readings: the busy time of all
// cores minus this process's own CPU time, over the wall time between the readings. Clamped
// at 0 (tick rounding can make it slightly negative on an idle machine).
double other_busy_cores(double busy_before_s, double busy_after_s, double self_cpu_s,
                        double wall_s);

// What one sampling window read: the busy time of all cores, this process's own CPU time (all
// of its threads) and the wall time, each over the same window.
struct CpuWindow {
  double machine_busy_s = 0;
  double own_cpu_s = 0;
  double wall_s = 0;
};

// other_busy_cores over one window's readings.
double other_busy_cores(const CpuWindow& window);

// Reads the machine's and this process's CPU time over `window` (this thread sleeps
// meanwhile); nullopt where /proc/stat cannot be read (not Linux).
std::optional<CpuWindow> sample_cpu_window(std::chrono::milliseconds window);

// Other processes' busy cores measured over `window`; nullopt as above.
std::optional<double> sample_other_busy_cores(
    std::chrono::milliseconds window = std::chrono::milliseconds(150));

// At or above this many busy cores elsewhere, a run's timing is marked as taken under
// competition: half a core is more than an idle machine's daemons use, and on a small machine
// it is a whole thread's share of memory bandwidth and caches.
inline constexpr double kCompetingBusyCores = 0.5;

}  // namespace plumb::platform
