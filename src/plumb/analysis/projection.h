// Facebook DL-inference Fig. 3: projects a model's per-layer demands onto a hypothetical
// accelerator (peak ops/s, DRAM bandwidth, an on-chip memory of given capacity and bandwidth)
// with a per-layer roofline and a greedy on-chip allocation, to show how on-chip capacity
// changes inference time. Pure functions, no LibTorch.
#pragma once

#include <string>
#include <vector>

namespace plumb::analysis {

struct Accelerator {
  double peak_ops_per_s = 0;      // e.g. 100e12 (the paper's 100 TOP/s)
  double dram_bytes_per_s = 0;    // e.g. 100e9
  double onchip_bytes = 0;        // capacity; 0 = no on-chip memory, +inf = unlimited
  double onchip_bytes_per_s = 0;  // e.g. 1e12 or 10e12
};

struct LayerDemand {
  std::string layer;
  double ops = 0;  // FLOPs, MAC = 2
  // At the projected element size (the paper: int8, 1 byte per element).
  double weight_bytes = 0;
  double activation_bytes = 0;  // input + output activations
};

struct LayerProjection {
  std::string layer;
  bool weights_onchip = false;      // pinned (false for a layer without weights)
  bool activations_onchip = false;  // false for a layer without activations
  double compute_s = 0;             // ops / peak
  double dram_s = 0;                // off-chip bytes / DRAM bandwidth
  double onchip_s = 0;              // on-chip bytes / on-chip bandwidth
  double time_s = 0;                // max of the three
  std::string bound;                // "compute" | "dram" | "onchip": the term that set time_s
};

struct Projection {
  std::vector<LayerProjection> layers;  // in input order
  double time_s = 0;                    // sum over layers (they run one after another)
  double achieved_ops_per_s = 0;        // total ops / time_s (0 when time_s is 0)
  double onchip_weight_bytes = 0;       // pinned weights
};

// Model (the paper applies "a roofline model for each layer" with "a simple greedy on-chip
// memory allocation algorithm"):
// 1. Weights persist across inferences, so they are placed first and stay on-chip. Every
//    layer's weights are ranked by time saved per byte pinned = (layer time with its weights
//    from DRAM - with them on-chip) / weight bytes, both with the layer's activations from
//    DRAM (their place is decided later, and DRAM is where they go if nothing is left); ties by
//    layer order. Walking that ranking, a layer's weights are pinned whole when they fit in the
//    capacity still free; one that does not fit is skipped and smaller ones later in the
//    ranking may still be pinned. A layer that saves nothing (compute-bound either way) is
//    never pinned: the space is worth more to activations.
// 2. Activations live only while their layer runs, so each layer, in order, independently gets
//    the capacity left after the pinned weights: its activations are on-chip when they fit
//    there and that does not make the layer slower. It can make it slower: DRAM and on-chip
//    transfers overlap (step 3), so with the weights already saturating on-chip bandwidth,
//    reading the activations from DRAM in parallel beats queueing them on-chip too.
// 3. Per layer, compute, DRAM and on-chip transfers overlap: time = max(ops / peak,
//    off-chip bytes / DRAM bandwidth, on-chip bytes / on-chip bandwidth); ties name compute,
//    then dram, then onchip. Model time = sum over layers.
// Throws UsageError for a non-positive or non-finite peak or bandwidth, a negative or NaN
// capacity, or a negative or non-finite layer demand.
Projection project(const std::vector<LayerDemand>& layers, const Accelerator& accelerator);

}  // namespace plumb::analysis
