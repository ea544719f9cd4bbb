// Points in time within one training step, on the clock of the device that runs it. On the
// CPU a point is the host's steady clock when it is marked. On a GPU the host only queues
// work, so the host's clock says when a kernel was queued, not when it ran: a point is a
// CUDA event recorded on the calling thread's current stream, and its time is when the GPU
// reached it. The data-parallel reducer marks the step's first gradient, each bucket's
// launch and completion, and the end of backward with it, from autograd's threads and the
// communication library's callbacks alike (marking is thread-safe).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

#include <c10/core/Device.h>

#ifdef PLUMB_WITH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#endif

namespace plumb::run {

class StepTimeline {
 public:
  // Throws UsageError for a CUDA device in a plumb built without CUDA.
  explicit StepTimeline(c10::Device device);

  // Forgets the previous step's points and marks the new step's origin.
  void start();
  // Marks a point now (GPU: when the current stream gets there); returns its index.
  size_t mark();
  // Seconds from the origin to point `index`. On a GPU this waits until the stream has
  // passed the point, so read a step's points after the step (StepLoop synchronises).
  double seconds(size_t index);

 private:
  c10::Device device_;
  std::mutex mutex_;
  std::vector<int64_t> host_ns_;  // CPU: [0] is the origin
#ifdef PLUMB_WITH_CUDA
  std::deque<at::cuda::CUDAEvent> events_;  // GPU: [0] is the origin; a deque keeps them put
#endif
};

}  // namespace plumb::run
