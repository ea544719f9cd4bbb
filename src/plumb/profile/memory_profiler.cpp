// Memory-profiling pass (see memory_profiler.h).
#include "plumb/profile/memory_profiler.h"

#include <chrono>
#include <fstream>

#include <fmt/format.h>

#include "plumb/core/errors.h"
#include "plumb/core/generation.h"
#include "plumb/core/text.h"
#include "plumb/platform/memory_cap.h"
#include "plumb/profile/allocation_tracker.h"
#include "plumb/run/heap_policy.h"
#include "plumb/run/runner.h"
#include "plumb/run/step_loop.h"

namespace plumb::profile {
namespace {

// Resets the kernel's peak-resident-set counter (VmHWM) to the current resident set.
bool reset_peak_rss() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

std::string memory_command(const Workload& w, const run::RunOptions& o, const MemoryOptions& m) {
  std::vector<std::string> own;
  if (m.warmup_steps != MemoryOptions{}.warmup_steps)
    own = {"--warmup-steps", std::to_string(m.warmup_steps)};
  return run::command_line("plumb memory", w, o, own);
}

// Marks the tracker's step boundaries around one loop step, on every exit path.
double tracked_step(AllocationTracker& tracker, run::StepLoop& loop) {
  struct Guard {
    AllocationTracker& t;
    ~Guard() { t.end_step(); }
  } guard{tracker};
  tracker.begin_step();
  return loop.step();
}

void add_storage(const AllocationTracker& tracker, const torch::Tensor& t,
                 std::unordered_set<uint64_t>& ids) {
  if (!t.defined()) return;
  if (t.is_sparse()) {
    // A sparse gradient (embeddings with sparse=true) owns no storage itself: its bytes are
    // its index and value tensors.
    add_storage(tracker, t._indices(), ids);
    add_storage(tracker, t._values(), ids);
    return;
  }
  if (!t.has_storage() || t.storage().data() == nullptr) return;
  const uint64_t id = tracker.allocation_containing(t.storage().data());
  if (id != 0) ids.insert(id);
}

KnownAllocations identify(const AllocationTracker& tracker, run::StepLoop& loop) {
  KnownAllocations known;
  torch::nn::Module& module = loop.model().module();
  for (const auto& p : module.parameters()) {
    add_storage(tracker, p, known.weights);
    add_storage(tracker, p.grad(), known.gradients);
  }
  for (const auto& b : module.buffers()) add_storage(tracker, b, known.weights);
  for (const Batch& batch : loop.batches())
    for (const auto& t : batch.tensors) add_storage(tracker, t, known.input);
  return known;
}

}  // namespace

int64_t available_memory_bytes() {
  const int64_t bytes = platform::proc_kib_field("/proc/meminfo", "MemAvailable");
  return bytes < 0 ? 0 : bytes;
}

MemoryProfileResult profile_memory(const Workload& workload, const run::RunOptions& o,
                                   const MemoryOptions& m) {
  run::validate_options(o);
  if (m.warmup_steps < 1)
    throw UsageError(fmt::format(
        "--warmup-steps must be at least 1 (the first step makes the gradients and optimizer "
        "state), got {}",
        m.warmup_steps));
  if (m.limit_bytes < 0) throw UsageError("a memory limit cannot be negative");
  const bool on_gpu = run::names_a_gpu(o.device);
  MemoryProfileResult p;
  p.source = m.source.value_or(on_gpu ? AllocationSource::kProfilerReports
                                      : AllocationSource::kCpuAllocatorWrapper);
  if (p.source == AllocationSource::kCpuAllocatorWrapper && on_gpu)
    throw UsageError("the CPU allocator wrapper does not see a GPU's tensors");
  const bool enforces_limit = p.source == AllocationSource::kCpuAllocatorWrapper;
  if (m.limit_bytes > 0 && !enforces_limit)
    throw UsageError(
        "a memory limit needs the CPU allocator wrapper: the allocators' reports come after an "
        "allocation, so none can be refused");
  p.command = memory_command(workload, o, m);
  p.started_at = utc_now_iso8601();
  p.threads = o.threads;
  p.throughput_unit = workload.info.throughput_unit;
  const int64_t machine_limit = available_memory_bytes() / 10 * 9;  // leave the rest some room
  p.limit_bytes = !enforces_limit ? 0 : m.limit_bytes > 0 ? m.limit_bytes : machine_limit;

  // glibc raises its mmap threshold after the first large free, and a timing run in the same
  // process (plumb sweep) keeps freed blocks on purpose; either way the resident set stops
  // following the live bytes (measured: a 189 MB tracked peak showed as 232-284 MB of
  // resident growth). Returning every freed block to the kernel makes the resident-set
  // comparison below measure the tensors, not the heap's history (fully so in a process that
  // has not timed a run before, as plumb memory's: docs/memory.md).
  if (o.heap == HeapPolicy::kReturn) run::return_freed_memory_to_kernel();
  const bool rss_reset = reset_peak_rss();
  const int64_t rss_before = platform::proc_kib_field("/proc/self/status", "VmRSS");
  run::RunResult r;  // failure status and warnings
  {
    AllocationTracker tracker(p.source, on_gpu ? c10::DeviceType::CUDA : c10::DeviceType::CPU,
                              enforces_limit ? static_cast<size_t>(machine_limit) : 0);
    run::with_model(
        workload, o, r,
        [&](run::StepLoop& loop) {
          p.units_per_step = loop.units();
          if (enforces_limit) tracker.set_limit_bytes(static_cast<size_t>(p.limit_bytes));
          for (int i = 0; i < m.warmup_steps; ++i) tracked_step(tracker, loop);
          tracker.start_recording();
          const int64_t recorded_step = m.warmup_steps;
          try {
            p.step_s = tracked_step(tracker, loop);
          } catch (...) {
            tracker.stop_recording();
            throw;
          }
          const KnownAllocations known = identify(tracker, loop);
          p.breakdown =
              break_down(tracker.stop_recording(), known, recorded_step, m.timeline_points);
          const GenerativeModel* generative = as_generative(loop.model());
          if (generative != nullptr && !p.breakdown.phases.empty())
            p.breakdown.generation =
                GenerationMemory{generative->generation_shape(), generative->kv_cache_bytes()};
        },
        /*batch_pool=*/1);
    p.tracked_peak = static_cast<int64_t>(tracker.peak_live_bytes());
  }
  const int64_t hwm = platform::proc_kib_field("/proc/self/status", "VmHWM");
  if (rss_reset && rss_before >= 0 && hwm >= 0) {
    p.rss_peak_growth = hwm - rss_before;
  } else {
    p.warnings.push_back(
        "the process's peak resident set could not be reset or read (/proc/self/clear_refs, "
        "VmHWM); no resident-set comparison");
  }
  p.status = r.status;
  p.message = r.message;
  p.warnings.insert(p.warnings.end(), r.warnings.begin(), r.warnings.end());
  return p;
}

}  // namespace plumb::profile
