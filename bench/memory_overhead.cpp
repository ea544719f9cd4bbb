// Benchmark: how much the memory tracker (allocator hook + RecordFunction context + event
// recording) slows a step. One process, one model warmed up to steady state; rounds of K
// plain steps and K tracked-and-recorded steps, alternating which comes first
// (overhead_bench.h). Both halves run with glibc's dynamic mmap threshold, as `plumb memory`
// does by default; PLUMB_BENCH_MALLOC=fixed fixes it for both halves, as `plumb memory
// --rss-check` does (compare the plain steps of the two runs for what that costs).
//
// Usage: plumb_bench_memory_overhead WORKLOAD train|infer BATCH THREADS [ROUNDS] [STEPS]
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include <torch/torch.h>

#include "overhead_bench.h"
#include "plumb/profile/allocation_tracker.h"
#include "plumb/run/heap_policy.h"

int main(int argc, char** argv) {
  const auto args = plumb::bench::parse_bench_args(argc, argv);
  if (!args) return 2;
  const char* malloc_mode = std::getenv("PLUMB_BENCH_MALLOC");
  const bool fixed_threshold = malloc_mode != nullptr && std::string(malloc_mode) == "fixed";
  if (fixed_threshold) plumb::run::return_freed_memory_to_kernel();
  torch::set_num_threads(args->options.threads);
  plumb::bench::RoundTimes times;
  size_t allocations = 0;
  plumb::run::RunResult r;
  std::unique_ptr<plumb::profile::AllocationTracker> tracker;
  plumb::run::with_model(*args->workload, args->options, r, [&](plumb::run::StepLoop& loop) {
    plumb::run::warm_up(loop, args->options, r, {});
    times = plumb::bench::alternate(loop, args->rounds, args->steps,
                                    {[&] {
                                       tracker =
                                           std::make_unique<plumb::profile::AllocationTracker>();
                                       tracker->start_recording();
                                     },
                                     [&] {
                                       allocations = tracker->stop_recording().allocations.size();
                                       tracker.reset();
                                     }});
  });
  if (r.status != plumb::run::RunStatus::kOk) {
    std::fprintf(stderr, "run failed: %s\n", r.message.c_str());
    return 1;
  }
  plumb::bench::print_rounds(args->label + " (memory tracker, " +
                                 (fixed_threshold ? "fixed" : "glibc's dynamic") +
                                 " mmap threshold)",
                             times, args->steps);
  std::printf("%zu allocations recorded per tracked half (%d steps)\n", allocations, args->steps);
  return 0;
}
