// Allocator wrapper and phase/operator context for the memory profiler (see
// allocation_tracker.h).
#include "plumb/profile/allocation_tracker.h"

#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <unordered_map>

#include <ATen/record_function.h>
#include <c10/core/Allocator.h>
#include <c10/util/Exception.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <fmt/format.h>

#include "plumb/core/errors.h"
#include "plumb/core/torch_compat.h"
#include "plumb/profile/autograd_record.h"
#include "plumb/run/step_loop.h"

namespace plumb::profile {

const char* phase_name(StepPhase phase) {
  switch (phase) {
    case StepPhase::kBuild:
      return "build";
    case StepPhase::kData:
      return "data";
    case StepPhase::kForward:
      return "forward";
    case StepPhase::kBackward:
      return "backward";
    case StepPhase::kOptimizer:
      return "optimizer";
  }
  return "?";
}

namespace {

constexpr char kOptimizerScope[] = "optimizer";

// What the RecordFunction callback knows about the current thread.
struct Frame {
  enum class Kind { kOp, kLayer, kBackward, kOptimizer, kData, kPhase } kind;
  const char* name;               // valid while the RecordFunction is open, i.e. while the frame is
  Phase phase = Phase::kPrefill;  // of a kPhase frame
  int64_t start_ns = 0;           // of a kPhase frame, while recording
};
struct ThreadContext {
  std::vector<Frame> frames;
  int backward = 0, optimizer = 0, data = 0;  // open frames of each marker kind
  int8_t generation_phase = -1;               // innermost open phase frame's (a Phase), -1: none
};
thread_local ThreadContext t_context;

// One live allocation made through the wrapper.
struct Live {
  uint64_t id;
  size_t bytes;
  void* inner_context;  // what the original allocator's deleter needs
  c10::DeleterFnPtr inner_deleter;
  uint64_t generation;  // which tracker saw it made
  StepPhase phase;
  int64_t step;
  int op, layer;            // interned names
  int8_t generation_phase;  // a Phase, -1: none
};

// Process-wide and never destroyed: tensors made while a tracker was installed may be freed
// after it is gone (or during static destruction), and their deleter still needs the record.
struct Hub {
  std::mutex mutex;
  std::map<uintptr_t, Live> live;  // ordered: "which allocation contains this address"
  std::vector<std::string> names{""};
  std::unordered_map<std::string, int> name_ids{{"", 0}};
  uint64_t next_id = 1;
  uint64_t generation = 0;  // of the installed tracker; 0: none
  c10::Allocator* original = nullptr;
  c10::DeleterFnPtr fallback_deleter = nullptr;  // the original's raw deleter
  size_t limit = 0;
  size_t live_bytes = 0;  // of the current generation
  size_t peak_bytes = 0;
  std::atomic<bool> in_step{false};
  int64_t step = -1;
  // Recording.
  bool recording = false;
  int64_t start_ns = 0;
  bool forward_since_backward = false;
  AllocationRecording recording_out;
  std::unordered_map<uint64_t, size_t> recorded_index;  // id -> position in allocations

  int intern(const char* name) {
    if (name == nullptr || *name == '\0') return 0;
    auto [it, inserted] = name_ids.emplace(name, static_cast<int>(names.size()));
    if (inserted) names.emplace_back(name);
    return it->second;
  }
  TrackedAllocation describe(const Live& l, uintptr_t address) const {
    TrackedAllocation a;
    a.id = l.id;
    a.address = address;
    a.bytes = l.bytes;
    a.phase = l.phase;
    a.step = l.step;
    a.op = names[static_cast<size_t>(l.op)];
    a.layer = names[static_cast<size_t>(l.layer)];
    if (l.generation_phase >= 0) a.generation_phase = static_cast<Phase>(l.generation_phase);
    return a;
  }
};

Hub& hub() {
  static Hub* h = new Hub();  // intentionally leaked (see Hub)
  return *h;
}

StepPhase current_phase(const ThreadContext& t, const Hub& h) {
  if (t.data > 0) return StepPhase::kData;
  // Also outside steps: optimizers that allocate their state up front (Adagrad) are built
  // under the optimizer scope.
  if (t.optimizer > 0 && t.backward == 0) return StepPhase::kOptimizer;
  if (!h.in_step.load(std::memory_order_relaxed)) return StepPhase::kBuild;
  if (t.backward > 0) return StepPhase::kBackward;
  return StepPhase::kForward;
}

const char* innermost(const ThreadContext& t, Frame::Kind kind) {
  for (auto it = t.frames.rbegin(); it != t.frames.rend(); ++it)
    if (it->kind == kind) return it->name;
  return nullptr;
}

// Notes an allocation of `bytes` at `data` made now on this thread, in the thread's context
// (phase, operator, layer). `inner_*`: what the wrapped allocator's deleter needs (null for a
// reported allocation, which its allocator frees itself). Caller holds h.mutex.
void note_made(Hub& h, void* data, size_t bytes, void* inner_context,
               c10::DeleterFnPtr inner_deleter) {
  const ThreadContext& t = t_context;
  Live l;
  l.id = h.next_id++;
  l.bytes = bytes;
  l.inner_deleter = inner_deleter;
  l.inner_context = inner_context;
  l.generation = h.generation;
  l.phase = current_phase(t, h);
  l.step = h.step;
  l.op = h.intern(innermost(t, Frame::Kind::kOp));
  l.layer = h.intern(innermost(t, Frame::Kind::kLayer));
  l.generation_phase = t.generation_phase;
  h.live_bytes += bytes;
  if (h.live_bytes > h.peak_bytes) h.peak_bytes = h.live_bytes;
  const auto address = reinterpret_cast<uintptr_t>(data);
  if (h.recording) {
    TrackedAllocation a = h.describe(l, address);
    a.alloc_ns = steady_now_ns() - h.start_ns;
    if (l.phase == StepPhase::kForward) h.forward_since_backward = true;
    h.recorded_index.emplace(l.id, h.recording_out.allocations.size());
    h.recording_out.allocations.push_back(std::move(a));
  }
  auto stale = h.live.find(address);
  if (stale != h.live.end()) {
    // Our raw allocation was freed by the original raw deleter after the tracker was gone (or
    // its free was reported on a thread without the tracker's debug info): the address is free
    // again, so the old record is history.
    if (stale->second.generation == h.generation) h.live_bytes -= stale->second.bytes;
    h.live.erase(stale);
  }
  h.live.emplace(address, l);
}

// Notes the free of the allocation at `address`; returns its record, if it had one. Caller
// holds h.mutex.
std::optional<Live> note_freed(Hub& h, uintptr_t address) {
  auto it = h.live.find(address);
  if (it == h.live.end()) return std::nullopt;
  const Live l = it->second;
  if (l.generation == h.generation) {
    h.live_bytes -= l.bytes;
    if (h.recording) {
      auto found = h.recorded_index.find(l.id);
      if (found != h.recorded_index.end())
        h.recording_out.allocations[found->second].free_ns = steady_now_ns() - h.start_ns;
    }
  }
  h.live.erase(it);
  return l;
}

void tracked_delete(void* ptr) {
  Hub& h = hub();
  void* inner_context = ptr;
  // Raw memory the original allocator made can arrive here too: it is freed through whatever
  // raw_deleter() the CPU allocator has at that moment (LibTorch frees oneDNN's scratch
  // memory that way).
  c10::DeleterFnPtr inner_deleter = h.fallback_deleter;
  {
    std::lock_guard<std::mutex> lock(h.mutex);
    if (const std::optional<Live> l = note_freed(h, reinterpret_cast<uintptr_t>(ptr))) {
      inner_context = l->inner_context;
      inner_deleter = l->inner_deleter;
    }
  }
  if (inner_deleter != nullptr) inner_deleter(inner_context);
}

class TrackingAllocator final : public c10::Allocator {
 public:
#if PLUMB_TORCH_2
  c10::DataPtr allocate(size_t n) override {
    return allocate_tracked(n);
  }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
#else
  c10::DataPtr allocate(size_t n) const override {
    return allocate_tracked(n);
  }
#endif
  c10::DeleterFnPtr raw_deleter() const override {
    return &tracked_delete;
  }

 private:
  c10::DataPtr allocate_tracked(size_t n) const {
    Hub& h = hub();
    if (h.limit != 0 && n > 0) {
      std::lock_guard<std::mutex> lock(h.mutex);
      TORCH_CHECK_WITH(OutOfMemoryError, h.live_bytes + n <= h.limit,
                       fmt::format("out of memory: allocating {} bytes would take the {} bytes in "
                                   "use over the memory limit of {} bytes",
                                   n, h.live_bytes, h.limit));
    }
    c10::DataPtr inner = h.original->allocate(n);
    void* data = inner.get();
    if (data == nullptr) return inner;  // zero-byte allocations own nothing
    c10::DeleterFnPtr inner_deleter = inner.get_deleter();
    void* inner_context = inner.release_context();
    {
      std::lock_guard<std::mutex> lock(h.mutex);
      note_made(h, data, n, inner_context, inner_deleter);
    }
    // Context == data, as the default CPU allocator does, so raw_allocate() works too.
    return {data, data, &tracked_delete, inner.device()};
  }
};

// The receiver of LibTorch's allocation reports (AllocationSource::kProfilerReports): an
// allocation (a positive size) or a free (a negative one) of its device type.
class AllocationReports final : public c10::MemoryReportingInfoBase {
 public:
  using Total = ReportedTotalOf<decltype(&c10::MemoryReportingInfoBase::reportMemoryUsage)>::type;
  explicit AllocationReports(c10::DeviceType device) : device_(device) {}
  void reportMemoryUsage(void* ptr, int64_t alloc_size, Total, Total, c10::Device device) override {
    if (device.type() != device_ || ptr == nullptr || alloc_size == 0) return;
    Hub& h = hub();
    std::lock_guard<std::mutex> lock(h.mutex);
    if (h.generation == 0) return;  // reported after the tracker was destroyed
    if (alloc_size > 0)
      note_made(h, ptr, static_cast<size_t>(alloc_size), nullptr, nullptr);
    else
      note_freed(h, reinterpret_cast<uintptr_t>(ptr));
  }
  bool memoryProfilingEnabled() const override { return true; }

 private:
  c10::DeviceType device_;
};

TrackingAllocator& tracking_allocator() {
  static TrackingAllocator* a = new TrackingAllocator();  // outlives every tensor (see Hub)
  return *a;
}

std::unique_ptr<at::ObserverContext> track_op_start(const at::RecordFunction& fn) {
  ThreadContext& t = t_context;
  const char* name = fn.name();
  Frame frame{Frame::Kind::kOp, name};
  if (fn.scope() == at::RecordScope::USER_SCOPE) {
    if (std::strcmp(name, kOptimizerScope) == 0) {
      frame.kind = Frame::Kind::kOptimizer;
      ++t.optimizer;
    } else if (std::strcmp(name, run::kDataScope) == 0) {
      frame.kind = Frame::Kind::kData;
      ++t.data;
    } else if (const std::optional<Phase> phase = phase_of_scope(name)) {
      frame.kind = Frame::Kind::kPhase;
      frame.phase = *phase;
      frame.name = nullptr;  // not a layer
      t.generation_phase = static_cast<int8_t>(*phase);
      frame.start_ns = steady_now_ns();
    } else {
      frame.kind = Frame::Kind::kLayer;
    }
  } else if (is_autograd_record(fn)) {
    frame.kind = Frame::Kind::kBackward;
    if (t.backward++ == 0) {
      Hub& h = hub();
      std::lock_guard<std::mutex> lock(h.mutex);
      if (h.recording && h.forward_since_backward) {
        h.recording_out.backward_starts_ns.push_back(steady_now_ns() - h.start_ns);
        h.forward_since_backward = false;
      }
    }
  }
  t.frames.push_back(frame);
  return nullptr;
}

void track_op_end(const at::RecordFunction&, at::ObserverContext*) {
  ThreadContext& t = t_context;
  if (t.frames.empty()) return;  // opened before the callback was installed
  switch (t.frames.back().kind) {
    case Frame::Kind::kBackward:
      --t.backward;
      break;
    case Frame::Kind::kOptimizer:
      --t.optimizer;
      break;
    case Frame::Kind::kData:
      --t.data;
      break;
    case Frame::Kind::kPhase: {
      const Frame& f = t.frames.back();
      t.generation_phase = -1;  // phases do not nest
      Hub& h = hub();
      std::lock_guard<std::mutex> lock(h.mutex);
      if (h.recording && f.start_ns >= h.start_ns)
        h.recording_out.phase_calls.push_back(
            {f.phase, f.start_ns - h.start_ns, steady_now_ns() - h.start_ns});
      break;
    }
    default:
      break;
  }
  t.frames.pop_back();
}

}  // namespace

struct AllocationTracker::State {
  AllocationSource source = AllocationSource::kCpuAllocatorWrapper;
  at::CallbackHandle callback = 0;
  // kProfilerReports: the receiver, installed on the constructing thread while the tracker
  // lives (LibTorch's ThreadLocalState carries it into the autograd engine's threads).
  std::optional<c10::DebugInfoGuard> reports;
};

AllocationTracker::AllocationTracker(size_t limit_bytes)
    : AllocationTracker(AllocationSource::kCpuAllocatorWrapper, c10::DeviceType::CPU, limit_bytes) {
}

AllocationTracker::AllocationTracker(AllocationSource source, c10::DeviceType device,
                                     size_t limit_bytes)
    : state_(std::make_shared<State>()) {
  PLUMB_ASSERT(source == AllocationSource::kProfilerReports || device == c10::DeviceType::CPU,
               "the allocator wrapper tracks the CPU allocator only");
  PLUMB_ASSERT(source == AllocationSource::kCpuAllocatorWrapper || limit_bytes == 0,
               "allocator reports come after the allocation: no limit can be enforced");
  state_->source = source;
  Hub& h = hub();
  {
    std::lock_guard<std::mutex> lock(h.mutex);
    PLUMB_ASSERT(h.generation == 0, "an AllocationTracker is already installed");
    static uint64_t generations = 0;
    h.generation = ++generations;
    h.original = c10::GetAllocator(c10::DeviceType::CPU);
    h.fallback_deleter = h.original->raw_deleter();
    h.limit = limit_bytes;
    h.live_bytes = 0;
    h.peak_bytes = 0;
    h.step = -1;
    h.in_step = false;
  }
  t_context = ThreadContext{};
  if (source == AllocationSource::kCpuAllocatorWrapper) {
    // Priority 0 is what LibTorch registers its default CPU allocator with; equal priority
    // replaces it.
    c10::SetAllocator(c10::DeviceType::CPU, &tracking_allocator(), 0);
  } else {
    state_->reports.emplace(c10::DebugInfoKind::PROFILER_STATE,
                            std::make_shared<AllocationReports>(device));
  }
  state_->callback = at::addGlobalCallback(
      at::RecordFunctionCallback(&track_op_start, &track_op_end)
          .needsInputs(false)
          .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION,
                   at::RecordScope::USER_SCOPE}));
}

AllocationTracker::~AllocationTracker() {
  at::removeCallback(state_->callback);
  state_->reports.reset();
  Hub& h = hub();
  if (state_->source == AllocationSource::kCpuAllocatorWrapper)
    c10::SetAllocator(c10::DeviceType::CPU, h.original, 0);
  std::lock_guard<std::mutex> lock(h.mutex);
  h.generation = 0;
  h.limit = 0;
  h.recording = false;
  h.in_step = false;
}

void AllocationTracker::begin_step() {
  Hub& h = hub();
  std::lock_guard<std::mutex> lock(h.mutex);
  ++h.step;
  h.in_step = true;
}

void AllocationTracker::end_step() {
  hub().in_step = false;
}

void AllocationTracker::start_recording() {
  Hub& h = hub();
  std::lock_guard<std::mutex> lock(h.mutex);
  h.recording_out = AllocationRecording{};
  h.recorded_index.clear();
  for (const auto& [address, l] : h.live) {
    if (l.generation != h.generation) continue;
    h.recorded_index.emplace(l.id, h.recording_out.allocations.size());
    h.recording_out.allocations.push_back(h.describe(l, address));
  }
  h.forward_since_backward = false;
  h.start_ns = steady_now_ns();
  h.recording = true;
}

AllocationRecording AllocationTracker::stop_recording() {
  Hub& h = hub();
  std::lock_guard<std::mutex> lock(h.mutex);
  h.recording = false;
  AllocationRecording out = std::move(h.recording_out);
  out.duration_ns = steady_now_ns() - h.start_ns;
  h.recording_out = AllocationRecording{};
  h.recorded_index.clear();
  return out;
}

size_t AllocationTracker::live_bytes() const {
  Hub& h = hub();
  std::lock_guard<std::mutex> lock(h.mutex);
  return h.live_bytes;
}

size_t AllocationTracker::peak_live_bytes() const {
  Hub& h = hub();
  std::lock_guard<std::mutex> lock(h.mutex);
  return h.peak_bytes;
}

size_t AllocationTracker::limit_bytes() const {
  Hub& h = hub();
  std::lock_guard<std::mutex> lock(h.mutex);
  return h.limit;
}

void AllocationTracker::set_limit_bytes(size_t limit_bytes) {
  PLUMB_ASSERT(state_->source == AllocationSource::kCpuAllocatorWrapper || limit_bytes == 0,
               "allocator reports come after the allocation: no limit can be enforced");
  Hub& h = hub();
  std::lock_guard<std::mutex> lock(h.mutex);
  h.limit = limit_bytes;
}

uint64_t AllocationTracker::allocation_containing(const void* address) const {
  Hub& h = hub();
  const auto a = reinterpret_cast<uintptr_t>(address);
  std::lock_guard<std::mutex> lock(h.mutex);
  auto it = h.live.upper_bound(a);
  if (it == h.live.begin()) return 0;
  --it;
  if (a >= it->first + it->second.bytes || it->second.generation != h.generation) return 0;
  return it->second.id;
}

}  // namespace plumb::profile
