// The operator timer of a profile on the device's clock (the input of device_timeline.h): while
// it is alive, each outermost operator call (what model code called, or an autograd node in the
// backward pass; not the operators inside them) on any thread gets its host start and end and
// two marks on the step's timeline (run/step_timeline.h). On a GPU a mark is a CUDA event on the
// calling thread's current stream, so the span between an operator's two marks is when the
// device ran what it launched; on the CPU it is the host clock, and the two intervals coincide.
// Both clocks start at begin_step, called with the device idle, so they share an origin (up to
// the first event's launch latency, a few microseconds).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <c10/core/Device.h>

#include "plumb/profile/device_timeline.h"

namespace plumb::profile {

class DeviceOpTimer {
 public:
  // Installs the RecordFunction callback; only one timer may be alive at a time. Throws
  // UsageError for a CUDA device in a plumb built without CUDA.
  explicit DeviceOpTimer(c10::Device device);
  ~DeviceOpTimer();
  DeviceOpTimer(const DeviceOpTimer&) = delete;
  DeviceOpTimer& operator=(const DeviceOpTimer&) = delete;

  // Starts a step: forgets the last one's calls and marks both clocks' origin. Call it with
  // the device idle (after a synchronisation).
  void begin_step();
  // Ends the step with a last mark. Then synchronise the device before reading.
  void end_step();

  // The step's outermost calls in the order they started, on the origin's clock (seconds
  // from begin_step). An operator copying between host and device memory is a transfer, one
  // that reads a device value back a synchronisation (device_work_of). On a GPU this waits
  // for the step's events.
  std::vector<DeviceOpInterval> intervals();
  // From begin_step to end_step on the device's clock.
  double step_seconds();

  struct State;  // shared with the RecordFunction callbacks

 private:
  std::shared_ptr<State> state_;
};

}  // namespace plumb::profile
