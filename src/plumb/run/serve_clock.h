// The clock a serving engine runs on: seconds since the start of a run, and a wait until a
// given time. The steady clock waits by sleeping until shortly before the time, then spinning
// (a sleep alone wakes tens of microseconds late on a VM, more than an arrival schedule may be
// off by); a test's virtual clock advances by the costs a fake model declares, so schedules
// computed by hand can be checked exactly.
#pragma once

#include <chrono>

namespace plumb::run {

class ServeClock {
 public:
  virtual ~ServeClock() = default;
  virtual double now_s() = 0;
  // Returns at `at_s` or later (at once when that is past).
  virtual void wait_until_s(double at_s) = 0;
};

// Sleeps until 200 us before `target`, then spins to it.
void wait_until(std::chrono::steady_clock::time_point target);

class SteadyServeClock : public ServeClock {
 public:
  SteadyServeClock() : t0_(std::chrono::steady_clock::now()) {}
  double now_s() override;
  void wait_until_s(double at_s) override;

 private:
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace plumb::run
