// What a transformer run needs in memory, counted from its dimensions before the model is built,
// so that a preset beyond this machine (Llama-2-7B in fp32 on 24 GiB) is refused at once with
// the bytes it needs, instead of minutes of initialisation ending as out of memory.
//
// Counted: the weights as the run holds them (built in fp32; bf16 autocast adds its cached bf16
// copies, int8 its quantized copies), training's gradients and AdamW moments, and the KV cache
// of one generation. Not counted: activations and allocator slack, so the figure is a floor.
#pragma once

#include <optional>
#include <string>

#include "plumb/core/workload.h"
#include "plumb/run/run_result.h"

namespace plumb::run {

struct ModelFootprint {
  double weights = 0;         // parameters in every copy the run keeps
  double training_state = 0;  // gradients and optimizer moments (train only)
  double kv_cache = 0;        // one generation's cache (generative inference only)
  double total() const { return weights + training_state + kv_cache; }
};

// The footprint of `options` on a transformer workload; nullopt for other workloads.
std::optional<ModelFootprint> transformer_footprint(const Workload& workload,
                                                    const RunOptions& options);

// Throws UsageError naming the bytes needed and available when a transformer run cannot fit in
// `available_bytes` (MemAvailable when negative: read now).
void refuse_if_it_cannot_fit(const Workload& workload, const RunOptions& options,
                             int64_t available_bytes = -1);

// Bytes of one KV-cache element at a run's precision: the cache holds keys and values as the model
// computes them, half precision under bf16 autocast and in fp16, fp32 otherwise (int8 quantizes
// weights, not the cache).
double kv_element_bytes(Dtype dtype);

}  // namespace plumb::run
