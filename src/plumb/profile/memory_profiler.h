// A memory-profiling pass (TBD Sec. IV-B): build the workload with every allocation on its
// device tracked (allocation_tracker.h), take a few steps so that gradients and optimizer state
// exist, then record one step and say what its bytes are (memory_breakdown.h). Separate from timing
// runs: the step time here carries the tracker's overhead.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "plumb/core/workload.h"
#include "plumb/profile/allocation_tracker.h"
#include "plumb/profile/memory_breakdown.h"
#include "plumb/run/run_result.h"

namespace plumb::profile {

struct MemoryOptions {
  // Steps before the recorded one: the first makes the gradients and the optimizer state
  // (lazily, as LibTorch's optimizers do), the second shows the steady pattern.
  int warmup_steps = 2;
  // Capacity the tracker enforces on the steps (an allocation beyond it is out of memory): a
  // budget for the model, its optimizer, activations and the batch, not for plumb's own
  // synthesis of data before the steps. 0: 90% of what the machine has available when the
  // pass starts, enforced from the build on, so running out is a recorded status rather than
  // swapping or the kernel's OOM killer.
  int64_t limit_bytes = 0;
  size_t timeline_points = 200;
  // How allocations are learnt of; unset: by the run's device (the CPU allocator wrapper on
  // the CPU, which enforces the limit; the allocators' profiler reports on a GPU). Set to the
  // reports on the CPU, a pass sees what a GPU pass would through the same path, and no limit
  // is enforced.
  std::optional<AllocationSource> source;
};

struct MemoryProfileResult {
  run::RunStatus status = run::RunStatus::kOk;
  std::string message;  // why, when status != ok
  std::string command;  // plumb memory command that reproduces it
  std::string started_at;
  int threads = 1;
  int64_t limit_bytes = 0;  // the capacity enforced (0: none, with the allocator reports)
  AllocationSource source = AllocationSource::kCpuAllocatorWrapper;
  double step_s = 0;  // the recorded step (tracking on)
  double units_per_step = 0;
  std::string throughput_unit;
  MemoryBreakdown breakdown;
  // Largest tracked total since the build began (the build's transients included).
  int64_t tracked_peak = 0;
  // Growth of the process's peak resident set (VmHWM) over its resident set before the build
  // (after resetting the peak through /proc/self/clear_refs); -1 when Linux does not allow it.
  // It includes freed blocks glibc kept on its heap unless the run's heap policy is return
  // (--heap return, or --rss-check): glibc's mmap threshold is then fixed so freed large
  // blocks go back to the kernel and the resident set follows the live bytes. That is
  // process-wide and sticky, and it makes steps slower (measured: resnet50 train batch 8, 2
  // threads, 3031 ms vs 1403 ms per step), so it is asked for, never implied.
  int64_t rss_peak_growth = -1;
  std::vector<std::string> warnings;
};

// Bytes the machine can still give (MemAvailable), 0 when unknown.
int64_t available_memory_bytes();

MemoryProfileResult profile_memory(const Workload& workload, const run::RunOptions& options,
                                   const MemoryOptions& memory);

}  // namespace plumb::profile
