// Overhead of plumb serve's load generator and batcher (run/serving_loop.h) with a model that
// does nothing: the rate it sustains on one core and how late a query starts after its
// scheduled arrival (the scheduling error), at a given Poisson rate, and the most queries per
// second the loop can hand out when every query is already waiting. Target (issue 25):
// >= 50k queries/s with p99 scheduling error under 50 us. Run on an idle machine:
//   ./build/bench/plumb_bench_serve_generator [rate=50000] [queries=500000] [rounds=3]
#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "plumb/run/serving_loop.h"
#include "plumb/run/stats.h"

int main(int argc, char** argv) {
  using namespace plumb::run;
  const double rate = argc > 1 ? std::atof(argv[1]) : 50000;
  const size_t queries = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 500000;
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 3;
  // One core: the generator, batcher and (no-op) service all run on the calling thread.
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(0, &one);
  if (sched_setaffinity(0, sizeof one, &one) != 0) std::fprintf(stderr, "could not pin to cpu 0\n");
  ServingOptions o;
  o.policy = {1, 0.0};
  const ServiceFn noop = [](int64_t) {};
  std::printf("%-9s %12s %12s %10s %10s %10s %10s\n", "round", "offered q/s", "served q/s",
              "err p50 us", "err p99 us", "p99.9 us", "max us");
  for (int round = 1; round <= rounds; ++round) {
    const auto arrivals = poisson_arrivals(rate, queries, static_cast<uint64_t>(round));
    const auto times = serve_arrivals(arrivals, o, noop);
    std::vector<double> error;
    error.reserve(times.size());
    double end = 0;
    for (const auto& t : times) {
      error.push_back(1e6 * t.queueing_s());
      end = std::max(end, t.finish_s);
    }
    std::sort(error.begin(), error.end());
    std::printf("%-9d %12.0f %12.0f %10.2f %10.2f %10.2f %10.2f\n", round,
                static_cast<double>(queries) / arrivals.back(),
                static_cast<double>(queries) / (end - times.front().arrival_s),
                percentile_sorted(error, 0.5), percentile_sorted(error, 0.99),
                percentile_sorted(error, 0.999), error.back());
  }
  // Capacity: every query waiting at once, batches of one.
  const std::vector<double> waiting(queries, 0.0);
  const auto times = serve_arrivals(waiting, o, noop);
  double end = 0;
  for (const auto& t : times) end = std::max(end, t.finish_s);
  std::printf("capacity (all %zu queries waiting, batches of 1): %.0f queries/s\n", queries,
              static_cast<double>(queries) / end);
  return 0;
}
