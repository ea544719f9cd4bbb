// Data-parallel gradient averaging as PyTorch's DDP reducer does it, around an unchanged
// training step: the module's parameters are grouped into buckets of about `bucket_bytes`
// in reverse registration order (the order backward produces their gradients); a hook on
// every parameter copies its gradient into its bucket as autograd computes it, and a full
// bucket is all-reduced at once (asynchronously, buckets strictly in order so that every
// worker issues the same collectives), so communication overlaps the rest of backward. When
// backward ends (an autograd engine callback, before the optimizer step the workload runs
// next) the reducer waits for the outstanding buckets, divides by the number of workers and
// writes the averages into the parameters' .grad. A parameter that got no gradient in a step
// contributes zeros. Each step's communication is timed per bucket, on the clock of the
// parameters' device (step_timeline.h): on a GPU, when the streams really ran it.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include <torch/torch.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include "plumb/run/step_timeline.h"

namespace plumb::run {

struct BucketTiming {
  int64_t bytes = 0;
  double launched_s = 0;  // seconds since the step's first gradient
  double done_s = 0;      // ... when its all-reduce completed
};

// One backward pass's communication.
struct StepCommunication {
  double backward_s = 0;  // first gradient to the end of backward (all gradients computed)
  double exposed_s = 0;   // end of backward to all buckets averaged: what the step waited for
  double busy_s = 0;      // time at least one all-reduce was in flight
  std::vector<BucketTiming> buckets;
};

class GradientReducer {
 public:
  // Throws UsageError when a parameter has sparse gradients (an embedding built with
  // sparse=true): buckets hold dense gradients only.
  GradientReducer(torch::nn::Module& module, c10::intrusive_ptr<c10d::ProcessGroup> group,
                  int64_t bucket_bytes, bool overlap);
  ~GradientReducer();
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  // Every parameter and buffer takes rank 0's values (call once, before the first step).
  void broadcast_state();

  // The last backward pass's communication (on a GPU, read after the step has synchronised).
  const StepCommunication& last_step();
  size_t bucket_count() const { return buckets_.size(); }
  int64_t gradient_bytes() const { return gradient_bytes_; }

 private:
  struct Slot {
    torch::Tensor parameter;
    size_t bucket = 0;
    int64_t offset = 0;  // elements into the bucket
    bool ready = false;
  };
  struct Bucket {
    torch::Tensor flat;  // [elements], the parameters' dtype and device
    size_t pending = 0;  // slots still without a gradient this step
    c10::intrusive_ptr<c10d::Work> work;
    size_t launched = 0;         // timeline point of its launch
    std::optional<size_t> done;  // ... of its completion, once known
  };
  void on_gradient(size_t slot, const torch::Tensor& grad);
  void launch_ready_buckets();
  void launch(size_t bucket);
  void mark_done(size_t bucket, uint64_t step);
  void finish_step();

  torch::nn::Module& module_;
  c10::intrusive_ptr<c10d::ProcessGroup> group_;
  bool overlap_;
  std::vector<Slot> slots_;
  std::vector<Bucket> buckets_;
  std::vector<unsigned> hooks_;
  int64_t gradient_bytes_ = 0;
  size_t next_launch_ = 0;
  bool in_step_ = false;
  // Counts backward passes: a late completion callback of an earlier step is ignored.
  std::atomic<uint64_t> step_number_{0};
  std::mutex mutex_;       // hooks may run on several autograd threads
  std::mutex done_mutex_;  // completion callbacks run on the communication library's threads
  StepTimeline timeline_;
  // The last step's points, read into last_ when asked for (a GPU's only after the step).
  size_t backward_end_ = 0, averaged_ = 0;
  bool unread_ = false;
  StepCommunication last_;
};

}  // namespace plumb::run
