// The steady clock of the serving engines (see serve_clock.h).
#include "plumb/run/serve_clock.h"

#include <thread>

namespace plumb::run {

namespace {

using Clock = std::chrono::steady_clock;

// Sleeping wakes up late by tens of microseconds (more on a busy VM); the last stretch is spun.
constexpr double kSpinWindowS = 200e-6;

Clock::duration seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

}  // namespace

void wait_until(Clock::time_point target) {
  const auto sleep_until = target - seconds(kSpinWindowS);
  if (Clock::now() < sleep_until) std::this_thread::sleep_until(sleep_until);
  while (Clock::now() < target) {
  }
}

double SteadyServeClock::now_s() {
  return std::chrono::duration<double>(Clock::now() - t0_).count();
}

void SteadyServeClock::wait_until_s(double at_s) {
  wait_until(t0_ + seconds(at_s));
}

}  // namespace plumb::run
