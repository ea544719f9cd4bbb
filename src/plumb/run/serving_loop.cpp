// The open-loop generator and dynamic batcher (see serving_loop.h).
#include "plumb/run/serving_loop.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "plumb/core/errors.h"
#include "plumb/run/serve_clock.h"

namespace plumb::run {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

void wait_until(Clock::time_point t0, double at_s) {
  run::wait_until(t0 +
                  std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(at_s)));
}

// The queue's state, shared by the workers: the schedule and the first query not yet taken.
struct Queue {
  Queue(const std::vector<double>& arrivals_s, BatchPolicy batch_policy)
      : arrivals(arrivals_s), policy(batch_policy), t0(Clock::now()) {}
  const std::vector<double>& arrivals;
  BatchPolicy policy;
  Clock::time_point t0;
  std::mutex mutex;
  size_t next = 0;
};

// What a worker found when it looked at the queue.
struct Decision {
  size_t first = 0, count = 0;  // the batch it took (count 0: none)
  double wait_until_s = -1;     // otherwise: when to look again (-1: the run is over)
};

// The batcher's rule, under the queue's lock: take up to max_batch of the queries that have
// arrived, unless the batch is not full and the oldest has waited less than max_wait and more
// queries are still to come — then wait until the batch would fill or the wait runs out.
Decision decide(Queue& q, double now_s) {
  Decision d;
  const size_t n = q.arrivals.size();
  if (q.next == n) return d;
  const size_t first = q.next;
  if (q.arrivals[first] > now_s) {
    d.wait_until_s = q.arrivals[first];
    return d;
  }
  const size_t limit = std::min(n, first + static_cast<size_t>(q.policy.max_batch));
  size_t end = first;
  while (end < limit && q.arrivals[end] <= now_s) ++end;
  const double deadline = q.arrivals[first] + q.policy.max_wait_s;
  if (end < limit && now_s < deadline) {
    // The batch fills when its last place's query arrives, unless the wait ends first.
    d.wait_until_s = std::min(deadline, q.arrivals[limit - 1]);
    return d;
  }
  d.first = first;
  d.count = end - first;
  q.next = end;
  return d;
}

void serve_as_worker(Queue& q, int worker, const ServiceFn& service,
                     std::vector<QueryTimes>& times) {
  while (true) {
    Decision d;
    {
      std::lock_guard<std::mutex> lock(q.mutex);
      d = decide(q, seconds_between(q.t0, Clock::now()));
    }
    if (d.count == 0) {
      if (d.wait_until_s < 0) return;
      wait_until(q.t0, d.wait_until_s);
      continue;
    }
    const double start = seconds_between(q.t0, Clock::now());
    service(static_cast<int64_t>(d.count));
    const double finish = seconds_between(q.t0, Clock::now());
    for (size_t i = d.first; i < d.first + d.count; ++i) {
      times[i].start_s = start;
      times[i].finish_s = finish;
      times[i].batch = static_cast<int32_t>(d.count);
      times[i].worker = worker;
    }
  }
}

}  // namespace

std::vector<double> poisson_arrivals(double rate_qps, size_t count, uint64_t seed) {
  if (!(rate_qps > 0) || !std::isfinite(rate_qps))
    throw UsageError(
        fmt::format("an arrival rate must be a positive number of queries per "
                    "second, got {}",
                    rate_qps));
  return arrivals_from_gaps(std::exponential_distribution<double>(rate_qps), count, seed);
}

std::vector<QueryTimes> serve_arrivals(const std::vector<double>& arrivals_s,
                                       const ServingOptions& options, const ServiceFn& service) {
  PLUMB_ASSERT(
      options.policy.max_batch >= 1 && options.policy.max_wait_s >= 0 && options.workers >= 1,
      "serving options are validated by the caller");
  PLUMB_ASSERT(std::is_sorted(arrivals_s.begin(), arrivals_s.end()), "arrivals in order");
  std::vector<QueryTimes> times(arrivals_s.size());
  for (size_t i = 0; i < times.size(); ++i) times[i].arrival_s = arrivals_s[i];
  Queue q(arrivals_s, options.policy);
  if (options.workers == 1) {
    serve_as_worker(q, 0, service, times);
    return times;
  }
  // A failing batch (out of memory, a missing kernel) ends the run: the other workers find the
  // queue empty, and the first failure is rethrown on the calling thread.
  std::exception_ptr failure;
  std::vector<std::thread> workers;
  for (int w = 0; w < options.workers; ++w)
    workers.emplace_back([&, w] {
      try {
        const auto guard = options.on_worker_start ? options.on_worker_start() : nullptr;
        serve_as_worker(q, w, service, times);
      } catch (...) {
        std::lock_guard<std::mutex> lock(q.mutex);
        if (!failure) failure = std::current_exception();
        q.next = arrivals_s.size();
      }
    });
  for (auto& t : workers) t.join();
  if (failure) std::rethrow_exception(failure);
  return times;
}

std::vector<QueryTimes> serve_single_stream(size_t count, const ServiceFn& service) {
  std::vector<QueryTimes> times(count);
  const auto t0 = Clock::now();
  for (auto& t : times) {
    t.arrival_s = t.start_s = seconds_between(t0, Clock::now());
    service(1);
    t.finish_s = seconds_between(t0, Clock::now());
    t.batch = 1;
  }
  return times;
}

}  // namespace plumb::run
