// Allocation tracking for the memory profiler (TBD Sec. IV-B; PyTorch reports only peaks).
//
// While an AllocationTracker is alive it learns of every allocation LibTorch makes on one
// device (AllocationSource) and notes the allocation's size, time, the operator and layer
// running on the allocating thread, and the step phase (model build, data, forward, backward,
// optimizer step), then the free. Operator, layer and
// phase come from an at::RecordFunction callback on every thread: operators (FUNCTION scope),
// autograd nodes (backward), and user scopes, where "optimizer" marks the optimizer step (every
// workload wraps zero_grad/step in LayerScope("optimizer")), run::kDataScope marks batch
// synthesis, a generation phase's scope (core/generation.h: "plumb::prefill", "plumb::decode")
// marks the phase of a generative model's call, and any other name is a layer.
//
// Only what is recorded between start_recording() and stop_recording() keeps per-event
// detail; outside a recording the tracker only keeps the live set (needed to know each
// allocation's phase and size when it is freed, and the bytes in use for the limit).
//
// The tracker can also enforce a capacity: an allocation that would take the live total over
// `limit_bytes` throws c10::OutOfMemoryError, as a device with that much memory would — the
// run is then recorded as out of memory instead of the machine swapping or the kernel's OOM
// killer ending the process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <c10/core/DeviceType.h>

#include "plumb/core/generation.h"

namespace plumb::profile {

enum class StepPhase { kBuild, kData, kForward, kBackward, kOptimizer };

// How the tracker learns of allocations.
enum class AllocationSource {
  // A wrapper around LibTorch's CPU allocator, installed with c10::SetAllocator (LibTorch's
  // allocator hook): it asks the original allocator for the bytes, so it sees each allocation
  // before it is made and can refuse one beyond a capacity.
  kCpuAllocatorWrapper,
  // What LibTorch's allocators report to a profiler (c10::reportMemoryUsageToProfiler) for
  // one device type: the CUDA caching allocator reports each block it hands out and takes
  // back, the CPU allocator each allocation and free. The reports go to the thread-local
  // debug info the tracker installs on its thread, which LibTorch carries into autograd's
  // threads; a thread it does not carry to (an OpenMP worker) reports nothing. The one view
  // of a GPU's tensors that needs no CUDA headers. A report comes after the allocation, so
  // no capacity is enforced: on a GPU the device's own memory is the capacity.
  kProfilerReports,
};
const char* phase_name(StepPhase phase);

// One allocation seen while recording (made during the recording, or alive when it began).
struct TrackedAllocation {
  uint64_t id = 0;  // in allocation order; unique for the tracker's lifetime
  uintptr_t address = 0;
  size_t bytes = 0;
  StepPhase phase = StepPhase::kBuild;
  int64_t step = -1;      // index of the step it was made in (-1: before the first step)
  std::string op;         // innermost operator running on the allocating thread ("" if none)
  std::string layer;      // innermost named layer ("" if none)
  int64_t alloc_ns = -1;  // from the start of the recording; -1: alive when it began
  int64_t free_ns = -1;   // -1: still alive when the recording stopped
  // The generation phase whose call made it (a generative model's inference step), or none.
  std::optional<Phase> generation_phase;
};

// Everything recorded between start_recording() and stop_recording().
struct AllocationRecording {
  std::vector<TrackedAllocation> allocations;  // by id
  // Times (ns from the start) at which a backward pass began after forward work: the moment a
  // forward pass ends, when what it still holds is what it saved for backward.
  std::vector<int64_t> backward_starts_ns;
  // Each generation phase call of the recording (prefill, then the decodes), in order.
  struct PhaseCall {
    Phase phase = Phase::kPrefill;
    int64_t start_ns = 0, end_ns = 0;
  };
  std::vector<PhaseCall> phase_calls;
  int64_t duration_ns = 0;
};

class AllocationTracker {
 public:
  // Installs the allocator wrapper and the RecordFunction callback; only one tracker may be
  // alive at a time. limit_bytes = 0: no limit.
  explicit AllocationTracker(size_t limit_bytes = 0);
  // Tracks the allocations of `device` as `source` tells of them (the wrapper: the CPU only).
  // Construct and destroy it on one thread: the reports' debug info is that thread's.
  AllocationTracker(AllocationSource source, c10::DeviceType device, size_t limit_bytes = 0);
  ~AllocationTracker();
  AllocationTracker(const AllocationTracker&) = delete;
  AllocationTracker& operator=(const AllocationTracker&) = delete;

  // Phase outside model steps (build or data); inside a step the phase comes from the
  // RecordFunction context. begin_step() numbers steps from 0.
  void begin_step();
  void end_step();

  void start_recording();
  AllocationRecording stop_recording();

  size_t live_bytes() const;
  size_t peak_live_bytes() const;  // since construction
  size_t limit_bytes() const;
  // Changes the capacity from now on (0: none); live bytes above it stay where they are. Only
  // the CPU allocator wrapper enforces one.
  void set_limit_bytes(size_t limit_bytes);

  // The id of the live allocation whose bytes contain `address`, 0 when none does (memory
  // that LibTorch did not allocate through the hook, or allocated before the tracker).
  uint64_t allocation_containing(const void* address) const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace plumb::profile
