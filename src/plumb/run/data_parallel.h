// One worker's part of a data-parallel training measurement (TBD section E) and of the
// all-reduce sweep, on a c10d process group every worker has joined (process_group.h; Gloo on
// the CPU, NCCL on GPUs, the model and buffers on the worker's device): the
// workload's own training step on the worker's own batches, gradients averaged by the
// bucketed, overlapped reducer (gradient_buckets.h), parameters taken from rank 0 first.
// Every worker runs the same fixed number of steps (collectives must match one to one); the
// figures are the slowest worker's per step, gathered with an all-reduce (max) at the end.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include "plumb/core/workload.h"
#include "plumb/run/gradient_buckets.h"
#include "plumb/run/run_result.h"

namespace plumb::run {

struct DataParallelOptions {
  RunOptions run;  // mode train; config's batch is the batch per worker; threads per worker
  int64_t bucket_bytes = 25 * 1024 * 1024;
  bool overlap = true;  // false: every bucket waits for the end of backward
  int warmup_steps = 5;
  int steps = 20;
};

// One worker's own means over the measured steps (DataParallelResult's per-step figures are
// the slowest worker's), on the clock its reducer marks with: the device's on a GPU (CUDA
// events, run/step_timeline.h), the host's on the CPU. A rank that computes slower than the
// others shows less exposed communication: it is the one the others wait for.
struct RankSplit {
  int rank = 0;
  double step_s = 0;     // its mean step
  double exposed_s = 0;  // communication it waited for after its last gradient
  double busy_s = 0;     // time any of its all-reduces was in flight
  double compute_s() const { return step_s - exposed_s; }
  double overlapped_s() const { return busy_s > exposed_s ? busy_s - exposed_s : 0; }
};

struct DataParallelResult {
  RunStatus status = RunStatus::kOk;
  std::string message;
  int workers = 1;
  // Per measured step, the slowest worker's: the step, its backward pass up to the last
  // gradient, the communication it waited for after that (exposed), and the time any
  // all-reduce was in flight.
  std::vector<double> step_s, backward_s, exposed_s, busy_s;
  size_t buckets = 0;
  int64_t gradient_bytes = 0;  // all-reduced per step by every worker
  double units_per_step = 0;   // of all workers together
  std::string throughput_unit;
  int64_t peak_rss_bytes = 0;                // the largest worker's resident set
  int64_t peak_device_bytes = 0;             // ... GPU memory LibTorch allocated (0: CPU)
  std::vector<BucketTiming> sample_buckets;  // rank 0's last measured step, per bucket
  std::vector<RankSplit> ranks;              // every worker's, by rank (status ok)
  std::vector<std::string> notes;            // precision notes of the build
};

// Throws UsageError for a workload whose step is not a plain backward + optimizer step
// (workload_data_parallel_refusal) or whose gradients are sparse.
DataParallelResult train_data_parallel(const Workload& workload, const DataParallelOptions& options,
                                       const c10::intrusive_ptr<c10d::ProcessGroup>& group);

// Why a workload cannot train data-parallel ("" when it can): a3c trains with Hogwild threads
// of its own, wgan_gp alternates critic and generator updates within one step.
std::string workload_data_parallel_refusal(const std::string& workload);

// One size of the all-reduce sweep: the time of one all-reduce of `bytes` of fp32 (the slowest
// worker's mean over back-to-back repetitions), and the bandwidths as nccl-tests defines them:
// algorithm bandwidth = bytes / time; bus bandwidth = algorithm bandwidth x 2(n-1)/n, what
// each link carries in a ring all-reduce, comparable across worker counts.
struct AllreduceSample {
  int64_t bytes = 0;
  int repetitions = 0;
  double seconds = 0;
  double algorithm_bytes_per_s = 0;
  double bus_bytes_per_s = 0;
};
// The buffers live on `device`, the group's (a GPU for NCCL).
std::vector<AllreduceSample> allreduce_sweep(const c10::intrusive_ptr<c10d::ProcessGroup>& group,
                                             c10::Device device, int64_t min_bytes,
                                             int64_t max_bytes);

// 2(n-1)/n: the share of a buffer each worker sends (and receives) in a ring all-reduce.
double ring_traffic_factor(int workers);

}  // namespace plumb::run
