// A step's points in time on the host clock or on CUDA events (see step_timeline.h).
#include "plumb/run/step_timeline.h"

#include "plumb/core/errors.h"
#include "plumb/run/step_loop.h"

namespace plumb::run {

StepTimeline::StepTimeline(c10::Device device) : device_(device) {
#ifndef PLUMB_WITH_CUDA
  if (device_.is_cuda())
    throw UsageError("this plumb was built against a LibTorch without CUDA: cannot time GPU work");
#endif
}

void StepTimeline::start() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    host_ns_.clear();
#ifdef PLUMB_WITH_CUDA
    events_.clear();
#endif
  }
  mark();  // the origin, point 0
}

size_t StepTimeline::mark() {
  std::lock_guard<std::mutex> lock(mutex_);
#ifdef PLUMB_WITH_CUDA
  if (device_.is_cuda()) {
    events_.emplace_back(cudaEventDefault);  // timing on: elapsed_time needs it
    events_.back().record();
    return events_.size() - 1;
  }
#endif
  host_ns_.push_back(steady_now_ns());
  return host_ns_.size() - 1;
}

double StepTimeline::seconds(size_t index) {
  std::lock_guard<std::mutex> lock(mutex_);
#ifdef PLUMB_WITH_CUDA
  if (device_.is_cuda()) {
    PLUMB_ASSERT(index < events_.size(), "a step timeline point that was never marked");
    events_[index].synchronize();
    return static_cast<double>(events_.front().elapsed_time(events_[index])) / 1e3;
  }
#endif
  PLUMB_ASSERT(index < host_ns_.size(), "a step timeline point that was never marked");
  return static_cast<double>(host_ns_[index] - host_ns_.front()) / 1e9;
}

}  // namespace plumb::run
