// A data-parallel worker's training measurement and the all-reduce sweep (see data_parallel.h).
#include "plumb/run/data_parallel.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#ifdef PLUMB_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif
#include <torch/cuda.h>

#include "plumb/core/errors.h"
#include "plumb/core/text.h"
#include "plumb/run/process_group.h"
#include "plumb/run/runner.h"
#include "plumb/run/stats.h"
#include "plumb/run/step_loop.h"

namespace plumb::run {
namespace {

// Element-wise maximum of `values` over every worker (the slowest worker's figures), through
// the group's own backend on `device` (NCCL reduces GPU tensors only).
std::vector<double> max_over_workers(const c10::intrusive_ptr<c10d::ProcessGroup>& group,
                                     c10::Device device, const std::vector<double>& values) {
  if (values.empty()) return values;
  std::vector<at::Tensor> one{torch::tensor(values, torch::kDouble).to(device)};
  c10d::AllreduceOptions max;
  max.reduceOp = c10d::ReduceOp::MAX;
  torch::Tensor t;
  try {
    group->allreduce(one, max)->wait();
    t = one.front().cpu();  // on a GPU the copy waits for the all-reduce
  } catch (const std::exception& e) {
    throw DistError(fmt::format("rank {}: gathering the results failed (a worker stopped?): {}",
                                group->getRank(), first_line(e.what())));
  }
  return {t.data_ptr<double>(), t.data_ptr<double>() + t.numel()};
}

int64_t peak_rss_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB
}

// The most GPU memory LibTorch's caching allocator had handed out on `device` (0 on the CPU).
int64_t peak_device_bytes(c10::Device device) {
#ifdef PLUMB_WITH_CUDA
  if (device.is_cuda()) {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
    return stats.allocated_bytes[0].peak;  // [0]: the aggregate over small and large pools
  }
#endif
  (void)device;
  return 0;
}

// Waits until the GPU has run what was queued on `device` (nothing to wait for on the CPU).
void wait_for_device(c10::Device device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

}  // namespace

std::string workload_data_parallel_refusal(const std::string& workload) {
  if (workload == "a3c")
    return "a3c trains with asynchronous Hogwild actor threads of its own, not one backward + "
           "optimizer step per batch";
  if (workload == "wgan_gp")
    return "wgan_gp alternates critic and generator updates (several backward passes and "
           "optimizers) within one step";
  return "";
}

double ring_traffic_factor(int workers) {
  return workers > 1 ? 2.0 * (workers - 1) / workers : 0.0;
}

DataParallelResult train_data_parallel(const Workload& workload, const DataParallelOptions& o,
                                       const c10::intrusive_ptr<c10d::ProcessGroup>& group) {
  if (const std::string why = workload_data_parallel_refusal(workload.info.name); !why.empty())
    throw UsageError(workload.info.name + " cannot train data-parallel: " + why);
  if (o.run.mode != Mode::kTrain) throw UsageError("data-parallel measurement is of training");
  if (o.steps < 2 || o.warmup_steps < 0)
    throw UsageError("--steps must be at least 2 and --warmup-steps at least 0");
  DataParallelResult out;
  out.workers = group->getSize();
  const c10::Device device = parse_device(o.run.device);
  RunResult status;
  // Each worker its own data (seed + rank); the parameters are rank 0's after the broadcast.
  RunOptions run = o.run;
  run.seed = o.run.seed + static_cast<uint64_t>(group->getRank());
  std::vector<double> step, backward, exposed, busy;
  with_model(workload, run, status, [&](StepLoop& loop) {
    GradientReducer reducer(loop.model().module(), group, o.bucket_bytes, o.overlap);
    out.buckets = reducer.bucket_count();
    out.gradient_bytes = reducer.gradient_bytes();
    reducer.broadcast_state();
    for (int i = 0; i < o.warmup_steps; ++i) loop.step();
    synchronize_workers(group, device);  // every worker starts measuring together
    for (int i = 0; i < o.steps; ++i) {
      step.push_back(loop.step());
      const auto& c = reducer.last_step();
      backward.push_back(c.backward_s);
      exposed.push_back(c.exposed_s);
      busy.push_back(c.busy_s);
    }
    out.sample_buckets = reducer.last_step().buckets;
    out.units_per_step = loop.units() * out.workers;
    out.throughput_unit = workload.info.throughput_unit;
  });
  out.status = status.status;
  out.message = status.message;
  out.notes = status.precision_notes;
  // Every worker reaches this point, failed or not, so that no one waits for a collective
  // that never comes; a failed worker contributes a status flag.
  const size_t n = static_cast<size_t>(o.steps);
  // Per step, the slowest worker's four figures; then this worker's status, peaks, and its
  // own means in its slot of the per-rank part (every other slot 0, so the maximum over the
  // workers is each rank's own figure).
  const size_t workers = static_cast<size_t>(out.workers);
  const size_t rank_part = 4 * n + 3;
  std::vector<double> all(rank_part + 3 * workers, 0.0);
  const bool ok = status.status == RunStatus::kOk && step.size() == n;
  if (ok) {
    std::copy(step.begin(), step.end(), all.begin());
    std::copy(backward.begin(), backward.end(), all.begin() + static_cast<ptrdiff_t>(n));
    std::copy(exposed.begin(), exposed.end(), all.begin() + static_cast<ptrdiff_t>(2 * n));
    std::copy(busy.begin(), busy.end(), all.begin() + static_cast<ptrdiff_t>(3 * n));
    const size_t mine = rank_part + 3 * static_cast<size_t>(group->getRank());
    all[mine] = mean_of(step);
    all[mine + 1] = mean_of(exposed);
    all[mine + 2] = mean_of(busy);
  } else {
    all[4 * n + 1] = 1;  // this worker failed
  }
  all[4 * n] = static_cast<double>(peak_rss_bytes());
  all[4 * n + 2] = static_cast<double>(peak_device_bytes(device));
  const auto worst = max_over_workers(group, device, all);
  out.peak_rss_bytes = static_cast<int64_t>(worst[4 * n]);
  out.peak_device_bytes = static_cast<int64_t>(worst[4 * n + 2]);
  if (worst[4 * n + 1] > 0 && out.status == RunStatus::kOk) {
    out.status = RunStatus::kError;
    out.message = "another worker's training step failed (see its message on stderr)";
  }
  if (out.status != RunStatus::kOk) return out;
  const auto at = [&](size_t k) {
    return std::vector<double>(worst.begin() + static_cast<ptrdiff_t>(k * n),
                               worst.begin() + static_cast<ptrdiff_t>((k + 1) * n));
  };
  out.step_s = at(0);
  out.backward_s = at(1);
  out.exposed_s = at(2);
  out.busy_s = at(3);
  for (size_t r = 0; r < workers; ++r) {
    const size_t slot = rank_part + 3 * r;
    out.ranks.push_back({static_cast<int>(r), worst[slot], worst[slot + 1], worst[slot + 2]});
  }
  return out;
}

std::vector<AllreduceSample> allreduce_sweep(const c10::intrusive_ptr<c10d::ProcessGroup>& group,
                                             c10::Device device, int64_t min_bytes,
                                             int64_t max_bytes) {
  std::vector<AllreduceSample> out;
  const int workers = group->getSize();
  for (int64_t bytes = min_bytes; bytes <= max_bytes; bytes *= 4) {
    auto buffer =
        torch::ones({std::max<int64_t>(1, bytes / 4)}, torch::TensorOptions().device(device));
    std::vector<at::Tensor> one{buffer};
    // Enough repetitions to time small sizes above the clock's noise, few for the large ones;
    // the same count on every worker (it depends on the size only).
    const int repetitions = static_cast<int>(
        std::clamp<int64_t>((int64_t{64} << 20) / std::max<int64_t>(bytes, 1), 5, 200));
    for (int i = 0; i < 2; ++i) group->allreduce(one)->wait();  // connections and buffers
    synchronize_workers(group, device);
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < repetitions; ++i) group->allreduce(one)->wait();
    wait_for_device(device);  // NCCL's wait() only orders the GPU's streams
    const double mean = seconds_since(start) / repetitions;
    AllreduceSample s;
    s.bytes = buffer.numel() * 4;
    s.repetitions = repetitions;
    s.seconds = max_over_workers(group, device, {mean}).front();
    s.algorithm_bytes_per_s = static_cast<double>(s.bytes) / s.seconds;
    s.bus_bytes_per_s = s.algorithm_bytes_per_s * ring_traffic_factor(workers);
    out.push_back(s);
  }
  return out;
}

}  // namespace plumb::run
