// The serving engine of plumb serve, independent of any model: queries arrive on a schedule
// (open loop: arrivals never wait for the server), a dynamic batcher groups the queries waiting
// into batches of up to max_batch, holding the oldest one at most max_wait for others to join,
// and worker threads run a service function on each batch. Every query's arrival, start and
// finish are recorded, so queueing and service stay separate.
//
// The schedule is drawn before the run (arrival_schedule.h) and a query "arrives" when the clock
// passes its time, so the generator costs nothing per query beyond a clock read: waiting is a
// sleep until shortly before the next event, then a spin (a sleep alone wakes tens of
// microseconds late on a VM).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <vector>

namespace plumb::run {

struct BatchPolicy {
  int64_t max_batch = 1;  // queries per batch at most
  double max_wait_s = 0;  // how long the oldest waiting query may wait for others to join
};

// Times in seconds from the start of the run.
struct QueryTimes {
  double arrival_s = 0;  // when it was due (its scheduled arrival)
  double start_s = 0;    // when its batch started
  double finish_s = 0;   // when its batch finished
  int32_t batch = 0;     // queries in its batch
  int32_t worker = 0;

  double latency_s() const { return finish_s - arrival_s; }
  double queueing_s() const { return start_s - arrival_s; }
  double service_s() const { return finish_s - start_s; }
};

// Runs one batch of `queries` queries (blocking); called from worker threads.
using ServiceFn = std::function<void(int64_t queries)>;

struct ServingOptions {
  BatchPolicy policy;
  int workers = 1;
  // Called once on each worker thread before it serves, to set thread-local state (LibTorch's
  // inference mode and autocast); what it returns is held until the worker ends (a guard). With
  // one worker the calling thread serves and it is not called.
  std::function<std::shared_ptr<void>()> on_worker_start;
};

// Arrival times, seconds from the start, ascending: the running sum of `count` gaps drawn from
// `gap` with a generator seeded by `seed`. Every arrival process (Poisson, gamma) draws its
// stream this way, so one seed means one sequence of draws.
template <typename GapDistribution>
std::vector<double> arrivals_from_gaps(GapDistribution gap, size_t count, uint64_t seed) {
  std::mt19937_64 generator(seed);
  std::vector<double> arrivals(count);
  double t = 0;
  for (auto& a : arrivals) a = t += gap(generator);
  return arrivals;
}

// Exponential inter-arrival times at `rate_qps` (a Poisson process), `count` arrivals, seeded:
// seconds from the start, ascending. Throws UsageError for a rate that is not positive.
std::vector<double> poisson_arrivals(double rate_qps, size_t count, uint64_t seed);

// Serves queries arriving at `arrivals_s` (ascending); returns their times in arrival order.
// Offline is the case of every arrival at 0.
std::vector<QueryTimes> serve_arrivals(const std::vector<double>& arrivals_s,
                                       const ServingOptions& options, const ServiceFn& service);

// SingleStream: one query at a time, each issued when the previous finished, `count` queries.
std::vector<QueryTimes> serve_single_stream(size_t count, const ServiceFn& service);

}  // namespace plumb::run
