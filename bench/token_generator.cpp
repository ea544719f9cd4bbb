// Overhead of plumb serve's token-level engine (run/token_scheduler.h) with a model that does
// nothing: how late a request is admitted after its scheduled arrival (the scheduling error) at
// a given arrival rate, under continuous batching with one-token requests (each is admitted,
// prefilled and finished within one iteration), and the requests per second the loop sustains.
// Target (issue 45): 10k requests/s with p99 scheduling error under 50 us. Run on an idle
// machine:
//   ./build/bench/plumb_bench_token_generator [rate=10000] [requests=200000] [rounds=3]
#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "plumb/core/slot_generation.h"
#include "plumb/run/request_stream.h"
#include "plumb/run/stats.h"
#include "plumb/run/token_scheduler.h"

namespace {

class NoopGenerator : public plumb::SlottedGenerator {
 public:
  int64_t kv_bytes_per_position() const override { return 1; }
  int64_t max_positions() const override { return 1 << 20; }
  void allocate_slots(int64_t, int64_t) override {}
  void prefill_slot(int64_t, int64_t, int64_t, bool) override {}
  void decode_slots(int64_t) override {}
  void move_slot(int64_t, int64_t) override {}
  int64_t slot_length(int64_t) const override { return 0; }
};

}  // namespace

int main(int argc, char** argv) {
  using namespace plumb::run;
  const double rate = argc > 1 ? std::atof(argv[1]) : 10000;
  const size_t count = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 200000;
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 3;
  // One core: arrivals, scheduler and the (no-op) engine all run on the calling thread.
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(0, &one);
  if (sched_setaffinity(0, sizeof one, &one) != 0) std::fprintf(stderr, "could not pin to cpu 0\n");
  SchedulerOptions o;
  o.kind = SchedulerKind::kContinuous;
  o.max_batch = 64;
  o.kv_budget_bytes = 1 << 30;
  LengthMix mix;
  mix.prompt = {1, 1};
  mix.output = {1, 1};
  NoopGenerator engine;
  std::printf("%-7s %14s %14s %10s %10s %10s %10s\n", "round", "offered req/s", "served req/s",
              "err p50 us", "err p99 us", "p99.9 us", "max us");
  for (int round = 1; round <= rounds; ++round) {
    const auto requests =
        draw_requests(mix, gamma_arrivals(rate, 1.0, count, static_cast<uint64_t>(round)), round);
    SteadyServeClock clock;
    const auto trace = serve_token_requests(requests, o, 2, engine, clock);
    std::vector<double> error;
    error.reserve(count);
    double end = 0;
    for (const auto& r : trace.requests) {
      error.push_back(1e6 * r.queueing_s());
      end = std::max(end, r.finish_s);
    }
    std::sort(error.begin(), error.end());
    std::printf("%-7d %14.0f %14.0f %10.2f %10.2f %10.2f %10.2f\n", round,
                static_cast<double>(count) / requests.back().arrival_s,
                static_cast<double>(count) / (end - requests.front().arrival_s),
                percentile_sorted(error, 0.5), percentile_sorted(error, 0.99),
                percentile_sorted(error, 0.999), error.back());
  }
  // Capacity: every request waiting at the start.
  const auto waiting = draw_requests(mix, std::vector<double>(count, 0.0), 1);
  SteadyServeClock clock;
  const auto trace = serve_token_requests(waiting, o, 2, engine, clock);
  double end = 0;
  for (const auto& r : trace.requests) end = std::max(end, r.finish_s);
  std::printf("capacity (all %zu requests waiting, up to %lld per iteration): %.0f requests/s\n",
              count, static_cast<long long>(o.max_batch), static_cast<double>(count) / end);
  return 0;
}
