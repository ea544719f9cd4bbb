// Categorisation of a recorded step's allocations (see memory_breakdown.h).
#include "plumb/profile/memory_breakdown.h"

#include <algorithm>
#include <map>

#include "plumb/core/errors.h"

namespace plumb::profile {

const char* category_key(MemoryCategory category) {
  switch (category) {
    case MemoryCategory::kWeights:
      return "weights";
    case MemoryCategory::kGradients:
      return "gradients";
    case MemoryCategory::kOptimizerState:
      return "optimizer_state";
    case MemoryCategory::kFeatureMaps:
      return "feature_maps";
    case MemoryCategory::kWorkspace:
      return "workspace";
    case MemoryCategory::kInput:
      return "input";
    case MemoryCategory::kKvCache:
      return "kv_cache";
    case MemoryCategory::kOther:
      return "other";
  }
  return "?";
}

MemoryCategory category_at(size_t index) {
  PLUMB_ASSERT(index < kMemoryCategoryCount, "memory category index out of range");
  return static_cast<MemoryCategory>(index);
}

MemoryCategory classify(const TrackedAllocation& a, const KnownAllocations& known,
                        const std::vector<int64_t>& backward_starts_ns, int64_t recorded_step) {
  if (known.weights.count(a.id) != 0) return MemoryCategory::kWeights;
  if (known.gradients.count(a.id) != 0) return MemoryCategory::kGradients;
  if (known.input.count(a.id) != 0) return MemoryCategory::kInput;
  if (a.generation_phase == Phase::kPrefill && a.free_ns < 0) return MemoryCategory::kKvCache;
  const bool from_earlier_step = a.alloc_ns < 0 || a.step < recorded_step;
  const bool survives = a.free_ns < 0;
  switch (a.phase) {
    case StepPhase::kOptimizer:
      // Kept from one step to the next: the update rule's state.
      return from_earlier_step || survives ? MemoryCategory::kOptimizerState
                                           : MemoryCategory::kWorkspace;
    case StepPhase::kForward: {
      if (from_earlier_step) return MemoryCategory::kOther;
      // Alive at the first backward start after it was made: saved for backward.
      auto next =
          std::upper_bound(backward_starts_ns.begin(), backward_starts_ns.end(), a.alloc_ns);
      if (next != backward_starts_ns.end() && (survives || a.free_ns > *next))
        return MemoryCategory::kFeatureMaps;
      return survives ? MemoryCategory::kOther : MemoryCategory::kWorkspace;
    }
    case StepPhase::kBackward:
      return from_earlier_step || survives ? MemoryCategory::kOther : MemoryCategory::kWorkspace;
    case StepPhase::kBuild:
    case StepPhase::kData:
      return from_earlier_step || survives ? MemoryCategory::kOther : MemoryCategory::kWorkspace;
  }
  return MemoryCategory::kOther;
}

namespace {

struct Event {
  int64_t t_ns;
  int64_t delta;  // bytes: + allocation, - free; 0: a phase call starts (its live total counts)
  size_t category;
};

// The phase call running at `t_ns` (calls sorted by start, not overlapping), or null.
const AllocationRecording::PhaseCall* phase_call_at(
    const std::vector<AllocationRecording::PhaseCall>& calls, int64_t t_ns) {
  auto after = std::upper_bound(
      calls.begin(), calls.end(), t_ns,
      [](int64_t t, const AllocationRecording::PhaseCall& c) { return t < c.start_ns; });
  if (after == calls.begin()) return nullptr;
  --after;
  return t_ns <= after->end_ns ? &*after : nullptr;
}

// One entry per phase that ran, in the order of all_phases(), with its calls and what its
// calls allocated.
std::vector<PhaseMemory> phases_of(const AllocationRecording& rec) {
  std::vector<PhaseMemory> out;
  for (Phase phase : all_phases()) {
    PhaseMemory m;
    m.phase = phase;
    for (const auto& c : rec.phase_calls) m.calls += c.phase == phase ? 1 : 0;
    for (const TrackedAllocation& a : rec.allocations) {
      if (a.alloc_ns < 0 || a.generation_phase != phase) continue;
      ++m.allocations;
      m.bytes_allocated += static_cast<int64_t>(a.bytes);
    }
    if (m.calls > 0) out.push_back(m);
  }
  return out;
}

int64_t total(const CategoryBytes& b) {
  int64_t sum = 0;
  for (int64_t x : b) sum += x;
  return sum;
}

}  // namespace

MemoryBreakdown break_down(const AllocationRecording& rec, const KnownAllocations& known,
                           int64_t recorded_step, size_t max_points, size_t largest_count) {
  PLUMB_ASSERT(max_points >= 2, "a memory timeline needs at least two points");
  MemoryBreakdown out;
  out.duration_ns = rec.duration_ns;
  out.backward_starts_ns = rec.backward_starts_ns;
  std::sort(out.backward_starts_ns.begin(), out.backward_starts_ns.end());

  std::vector<Event> events;
  std::map<std::string, int64_t> layer_bytes;
  std::vector<NotableAllocation> made;
  for (const TrackedAllocation& a : rec.allocations) {
    const MemoryCategory c = classify(a, known, out.backward_starts_ns, recorded_step);
    const auto ci = static_cast<size_t>(c);
    const auto bytes = static_cast<int64_t>(a.bytes);
    if (a.alloc_ns < 0) {
      out.at_start[ci] += bytes;
    } else {
      events.push_back({a.alloc_ns, bytes, ci});
      ++out.allocations;
      out.bytes_allocated += bytes;
      made.push_back({bytes, c, a.phase, a.op, a.layer});
      if (c == MemoryCategory::kFeatureMaps) layer_bytes[a.layer] += bytes;
    }
    if (a.free_ns >= 0) events.push_back({a.free_ns, -bytes, ci});
  }
  std::vector<AllocationRecording::PhaseCall> calls = rec.phase_calls;
  std::sort(calls.begin(), calls.end(),
            [](const auto& x, const auto& y) { return x.start_ns < y.start_ns; });
  for (const auto& c : calls) events.push_back({c.start_ns, 0, 0});
  out.phases = phases_of(rec);
  // Frees before allocations at the same instant: never report a peak that did not exist.
  std::sort(events.begin(), events.end(), [](const Event& x, const Event& y) {
    return x.t_ns != y.t_ns ? x.t_ns < y.t_ns : x.delta < y.delta;
  });

  CategoryBytes live = out.at_start;
  out.peak = live;
  out.at_total_peak = live;
  out.total_peak = total(live);
  // The timeline keeps, per time bucket, the point with the largest total, so the peak is
  // always among the points however many events there were.
  const size_t buckets = max_points - 1;  // plus the starting point
  const int64_t span = std::max<int64_t>(rec.duration_ns, 1);
  std::vector<TimelinePoint> best(buckets);
  std::vector<bool> filled(buckets, false);
  for (const Event& e : events) {
    live[e.category] += e.delta;
    out.peak[e.category] = std::max(out.peak[e.category], live[e.category]);
    const int64_t sum = total(live);
    if (sum > out.total_peak) {
      out.total_peak = sum;
      out.total_peak_ns = e.t_ns;
      out.at_total_peak = live;
    }
    if (const auto* call = phase_call_at(calls, e.t_ns)) {
      for (PhaseMemory& m : out.phases)
        if (m.phase == call->phase && sum > m.peak) {
          m.peak = sum;
          m.at_peak = live;
        }
    }
    const auto b = std::min<size_t>(
        buckets - 1, static_cast<size_t>(std::max<int64_t>(e.t_ns, 0) *
                                         static_cast<int64_t>(buckets) / (span + 1)));
    if (!filled[b] || sum > total(best[b].bytes)) {
      best[b] = {e.t_ns, live};
      filled[b] = true;
    }
  }
  out.timeline.push_back({0, out.at_start});
  for (size_t b = 0; b < buckets; ++b)
    if (filled[b]) out.timeline.push_back(best[b]);

  for (const auto& [layer, bytes] : layer_bytes) out.feature_map_layers.push_back({layer, bytes});
  std::stable_sort(out.feature_map_layers.begin(), out.feature_map_layers.end(),
                   [](const LayerBytes& x, const LayerBytes& y) { return x.bytes > y.bytes; });
  std::stable_sort(
      made.begin(), made.end(),
      [](const NotableAllocation& x, const NotableAllocation& y) { return x.bytes > y.bytes; });
  if (made.size() > largest_count) made.resize(largest_count);
  out.largest = std::move(made);
  return out;
}

double kv_cache_bytes_per_token(const MemoryBreakdown& b) {
  if (!b.generation || b.generation->positions() <= 0) return 0;
  // Every cache allocation is alive at the end of the step (that is what makes it the cache),
  // so the category's peak is its size then.
  return static_cast<double>(b.peak[static_cast<size_t>(MemoryCategory::kKvCache)]) /
         static_cast<double>(b.generation->positions());
}

}  // namespace plumb::profile
