// What the bytes of a recorded step are (TBD's categories), decided from what each allocation
// is, never from its size:
//   weights          storages of parameters and buffers (identified by address)
//   gradients        storages of the parameters' .grad tensors (by address)
//   input            storages of the batch's tensors (by address)
//   kv_cache         a generative model's KV cache: made inside a prefill call (the
//                    generation-phase scope of core/generation.h) and still alive when the
//                    recorded step has ended. What a prefill makes is otherwise its activations
//                    (freed when it returns) and the first token (freed when the generation
//                    returns); only the cache the decodes read outlives the step. A model that
//                    reuses its cache buffers from step to step made them in an earlier step's
//                    prefill: they count too. The model's own figure
//                    (GenerativeModel::kv_cache_bytes) is kept beside it as a check.
//   optimizer_state  made under the "optimizer" scope (the optimizer step, or the build of an
//                    optimizer that allocates up front, like Adagrad) and kept across steps:
//                    momentum, Adam's moments, RMSProp's squares (TBD's "dynamic" memory)
//   feature_maps     made in forward and still alive when the backward pass begins: what
//                    forward saved for backward
//   workspace        made and freed within one phase (inside an operator or between two);
//                    in inference every activation is workspace, as nothing is kept
//   other            anything else, reported rather than hidden: state carried between steps
//                    that is none of the above (replay memory, recurrent state), what a
//                    backward pass leaves behind, leftovers of the model build
// From the categories, the live bytes of each over the step (a timeline), the peak of each and
// of the total, the mix at the total peak, and which layers made the feature maps.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "plumb/profile/allocation_tracker.h"

namespace plumb::profile {

enum class MemoryCategory {
  kWeights,
  kGradients,
  kOptimizerState,
  kFeatureMaps,
  kWorkspace,
  kInput,
  kOther,
  // Last, so that the categories before it keep their positions (CategoryBytes arrays written
  // before it existed read the same).
  kKvCache
};
inline constexpr size_t kMemoryCategoryCount = 8;
// "weights", "gradients", "optimizer_state", "feature_maps", "workspace", "input", "other",
// "kv_cache"
const char* category_key(MemoryCategory category);
MemoryCategory category_at(size_t index);
using CategoryBytes = std::array<int64_t, kMemoryCategoryCount>;

// Allocation ids known by what they hold (AllocationTracker::allocation_containing).
struct KnownAllocations {
  std::unordered_set<uint64_t> weights, gradients, input;
};

struct TimelinePoint {
  int64_t t_ns = 0;  // from the start of the recording
  CategoryBytes bytes{};
};

struct LayerBytes {
  std::string layer;  // "" when made outside any named layer
  int64_t bytes = 0;
};

struct NotableAllocation {
  int64_t bytes = 0;
  MemoryCategory category = MemoryCategory::kOther;
  StepPhase phase = StepPhase::kForward;
  std::string op, layer;
};

// What the bytes of one generation phase's calls were, in a recorded generation step.
struct PhaseMemory {
  Phase phase = Phase::kPrefill;
  int64_t calls = 0;            // calls of the phase in the step (1 prefill; gen - 1 decodes)
  int64_t peak = 0;             // largest live total while one of its calls ran
  CategoryBytes at_peak{};      // the mix at that moment
  int64_t allocations = 0;      // made inside its calls
  int64_t bytes_allocated = 0;  // their total size
};

// The sizes of a recorded generation step, for the KV cache's bytes per token of context.
struct GenerationMemory {
  GenerationShape shape;
  int64_t declared_kv_cache_bytes = 0;  // GenerativeModel::kv_cache_bytes()
  // Positions the cache holds: batch x (prompt + gen).
  int64_t positions() const { return shape.batch * (shape.prompt + shape.gen); }
};

struct MemoryBreakdown {
  CategoryBytes peak{};                     // each category's own peak over the recording
  int64_t total_peak = 0;                   // peak of the sum
  int64_t total_peak_ns = 0;                // when it happened
  CategoryBytes at_total_peak{};            // the mix at that moment
  CategoryBytes at_start{};                 // live when the recording began
  std::vector<TimelinePoint> timeline;      // at most the requested points; the peak included
  std::vector<int64_t> backward_starts_ns;  // forward/backward boundaries
  int64_t duration_ns = 0;
  std::vector<LayerBytes> feature_map_layers;  // bytes of feature maps each layer made, desc
  std::vector<NotableAllocation> largest;      // the biggest allocations made while recording
  int64_t allocations = 0;                     // made while recording
  int64_t bytes_allocated = 0;                 // their total size
  // A generative model's inference step: one entry per phase that ran, in order, and the
  // generation's sizes (set by the profiler, not by break_down).
  std::vector<PhaseMemory> phases;
  std::optional<GenerationMemory> generation;
};

// The KV cache's bytes per position of context: its bytes at the end of the step over
// batch x (prompt + gen); 0 without a generation.
double kv_cache_bytes_per_token(const MemoryBreakdown& breakdown);

MemoryCategory classify(const TrackedAllocation& a, const KnownAllocations& known,
                        const std::vector<int64_t>& backward_starts_ns, int64_t recorded_step);

// `recorded_step`: the index of the step that was recorded (allocations from earlier steps
// are state carried across steps). `max_points` >= 2 bounds the timeline.
MemoryBreakdown break_down(const AllocationRecording& recording, const KnownAllocations& known,
                           int64_t recorded_step, size_t max_points = 200,
                           size_t largest_count = 10);

}  // namespace plumb::profile
