// A data-parallel worker's training measurement and the all-reduce sweep (see data_parallel.h).
#include "plumb/run/data_parallel.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "plumb/core/errors.h"
#include "plumb/run/process_group.h"
#include "plumb/run/step_loop.h"

namespace plumb::run {
namespace {

// Element-wise maximum of `values` over every worker (the slowest worker's figures).
std::vector<double> max_over_workers(const c10::intrusive_ptr<c10d::ProcessGroup>& group,
                                     const std::vector<double>& values) {
  if (values.empty()) return values;
  auto t = torch::tensor(values, torch::kDouble);
  std::vector<at::Tensor> one{t};
  c10d::AllreduceOptions max;
  max.reduceOp = c10d::ReduceOp::MAX;
  try {
    group->allreduce(one, max)->wait();
  } catch (const std::exception& e) {
    const std::string what = e.what();
    throw DistError(fmt::format("rank {}: gathering the results failed (a worker stopped?): {}",
                                group->getRank(), what.substr(0, what.find('\n'))));
  }
  return {t.data_ptr<double>(), t.data_ptr<double>() + t.numel()};
}

int64_t peak_rss_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB
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
    group->barrier()->wait();  // every worker starts measuring together
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
  std::vector<double> all(4 * n + 2, 0.0);
  if (status.status == RunStatus::kOk && step.size() == n) {
    std::copy(step.begin(), step.end(), all.begin());
    std::copy(backward.begin(), backward.end(), all.begin() + static_cast<ptrdiff_t>(n));
    std::copy(exposed.begin(), exposed.end(), all.begin() + static_cast<ptrdiff_t>(2 * n));
    std::copy(busy.begin(), busy.end(), all.begin() + static_cast<ptrdiff_t>(3 * n));
  } else {
    all[4 * n + 1] = 1;  // this worker failed
  }
  all[4 * n] = static_cast<double>(peak_rss_bytes());
  const auto worst = max_over_workers(group, all);
  out.peak_rss_bytes = static_cast<int64_t>(worst[4 * n]);
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
  return out;
}

std::vector<AllreduceSample> allreduce_sweep(const c10::intrusive_ptr<c10d::ProcessGroup>& group,
                                             int64_t min_bytes, int64_t max_bytes) {
  std::vector<AllreduceSample> out;
  const int workers = group->getSize();
  for (int64_t bytes = min_bytes; bytes <= max_bytes; bytes *= 4) {
    auto buffer = torch::ones({std::max<int64_t>(1, bytes / 4)}, torch::kFloat);
    std::vector<at::Tensor> one{buffer};
    // Enough repetitions to time small sizes above the clock's noise, few for the large ones;
    // the same count on every worker (it depends on the size only).
    const int repetitions = static_cast<int>(
        std::clamp<int64_t>((int64_t{64} << 20) / std::max<int64_t>(bytes, 1), 5, 200));
    for (int i = 0; i < 2; ++i) group->allreduce(one)->wait();  // connections and buffers
    group->barrier()->wait();
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < repetitions; ++i) group->allreduce(one)->wait();
    const double mean = seconds_since(start) / repetitions;
    AllreduceSample s;
    s.bytes = buffer.numel() * 4;
    s.repetitions = repetitions;
    s.seconds = max_over_workers(group, {mean}).front();
    s.algorithm_bytes_per_s = static_cast<double>(s.bytes) / s.seconds;
    s.bus_bytes_per_s = s.algorithm_bytes_per_s * ring_traffic_factor(workers);
    out.push_back(s);
  }
  return out;
}

}  // namespace plumb::run
