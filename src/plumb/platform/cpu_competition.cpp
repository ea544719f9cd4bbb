// Samples /proc/stat and this process's rusage to tell how busy other processes keep the CPU
// (see cpu_competition.h).
#include "plumb/platform/cpu_competition.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <thread>

#include "plumb/core/clock.h"

namespace plumb::platform {
namespace {

std::optional<double> read_busy_seconds() {
  std::ifstream in("/proc/stat");
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  return parse_busy_seconds(text.str(), sysconf(_SC_CLK_TCK));
}

}  // namespace

std::optional<double> parse_busy_seconds(const std::string& proc_stat, long ticks_per_second) {
  if (ticks_per_second <= 0) return std::nullopt;
  std::istringstream lines(proc_stat);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("cpu ", 0) != 0) continue;
    // cpu user nice system idle iowait irq softirq steal [guest guest_nice]: guest time is
    // already inside user and nice, and idle, iowait and steal are not this machine's work.
    std::istringstream fields(line.substr(4));
    double ticks[8];
    for (double& t : ticks)
      if (!(fields >> t) || t < 0) return std::nullopt;
    return (ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6]) / ticks_per_second;
  }
  return std::nullopt;
}

double other_busy_cores(double busy_before_s, double busy_after_s, double self_cpu_s,
                        double wall_s) {
  if (wall_s <= 0) return 0;
  return std::max(0.0, (busy_after_s - busy_before_s - self_cpu_s) / wall_s);
}

double other_busy_cores(const CpuWindow& window) {
  return other_busy_cores(0, window.machine_busy_s, window.own_cpu_s, window.wall_s);
}

std::optional<CpuWindow> sample_cpu_window(std::chrono::milliseconds window) {
  using Clock = std::chrono::steady_clock;
  const auto before = read_busy_seconds();
  const double self_before = process_cpu_seconds();
  const auto start = Clock::now();
  if (!before) return std::nullopt;
  std::this_thread::sleep_for(window);
  const auto after = read_busy_seconds();
  const double self_after = process_cpu_seconds();
  const double wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  if (!after) return std::nullopt;
  return CpuWindow{*after - *before, self_after - self_before, wall_s};
}

std::optional<double> sample_other_busy_cores(std::chrono::milliseconds window) {
  const auto sample = sample_cpu_window(window);
  if (!sample) return std::nullopt;
  return other_busy_cores(*sample);
}

}  // namespace plumb::platform
