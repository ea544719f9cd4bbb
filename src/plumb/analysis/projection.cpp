// Facebook Fig. 3 projection: per-layer roofline on a hypothetical accelerator, with weights
// pinned on-chip greedily by time saved per byte and activations on-chip where space is left.
#include "plumb/analysis/projection.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "plumb/analysis/input_checks.h"
#include "plumb/core/errors.h"

namespace plumb::analysis {
namespace {

void validate(const Accelerator& acc) {
  const std::pair<const char*, double> rates[] = {
      {"peak ops/s (--peak-tops)", acc.peak_ops_per_s},
      {"DRAM bandwidth (--dram-gbs)", acc.dram_bytes_per_s},
      {"on-chip bandwidth (--onchip-gbs)", acc.onchip_bytes_per_s}};
  for (const auto& [what, value] : rates) {
    if (!is_positive_finite(value)) {
      throw UsageError("projection: " + std::string(what) + " is " + number_text(value) +
                       "; it must be positive and finite");
    }
  }
  if (!(acc.onchip_bytes >= 0)) {  // also rejects NaN; +inf means unlimited
    throw UsageError("projection: on-chip capacity (--onchip-mb) is " +
                     number_text(acc.onchip_bytes) +
                     "; use 0 for no on-chip memory or a positive size");
  }
}

void validate(const LayerDemand& layer) {
  const std::pair<const char*, double> fields[] = {{"ops", layer.ops},
                                                   {"weight_bytes", layer.weight_bytes},
                                                   {"activation_bytes", layer.activation_bytes}};
  for (const auto& [field, value] : fields) {
    if (!(value >= 0) || !std::isfinite(value)) {
      throw UsageError("projection: layer '" + layer.layer + "' has " + field + " = " +
                       number_text(value) + "; demands must be finite and non-negative");
    }
  }
}

// One layer's roofline time for a given placement of its weights and activations.
LayerProjection layer_time(const LayerDemand& layer, const Accelerator& acc, bool weights_onchip,
                           bool activations_onchip) {
  LayerProjection p;
  p.layer = layer.layer;
  p.weights_onchip = weights_onchip;
  p.activations_onchip = activations_onchip;
  const double onchip = (weights_onchip ? layer.weight_bytes : 0.0) +
                        (activations_onchip ? layer.activation_bytes : 0.0);
  const double offchip = layer.weight_bytes + layer.activation_bytes - onchip;
  p.compute_s = layer.ops / acc.peak_ops_per_s;
  p.dram_s = offchip / acc.dram_bytes_per_s;
  p.onchip_s = onchip / acc.onchip_bytes_per_s;
  p.time_s = p.compute_s;
  p.bound = "compute";
  if (p.dram_s > p.time_s) {
    p.time_s = p.dram_s;
    p.bound = "dram";
  }
  if (p.onchip_s > p.time_s) {
    p.time_s = p.onchip_s;
    p.bound = "onchip";
  }
  return p;
}

// Step 1 of the model in projection.h: which layers' weights are pinned.
std::vector<bool> pin_weights(const std::vector<LayerDemand>& layers, const Accelerator& acc,
                              double* pinned_bytes) {
  struct Candidate {
    size_t index;
    double saving_per_byte;
  };
  std::vector<Candidate> candidates;
  for (size_t i = 0; i < layers.size(); ++i) {
    if (!(layers[i].weight_bytes > 0)) continue;
    const double from_dram = layer_time(layers[i], acc, false, false).time_s;
    const double from_chip = layer_time(layers[i], acc, true, false).time_s;
    const double saving = from_dram - from_chip;
    if (saving > 0) candidates.push_back({i, saving / layers[i].weight_bytes});
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) {
                     return a.saving_per_byte > b.saving_per_byte;  // stable: ties by layer order
                   });
  std::vector<bool> pinned(layers.size(), false);
  double free_bytes = acc.onchip_bytes;
  *pinned_bytes = 0;
  for (const Candidate& c : candidates) {
    const double bytes = layers[c.index].weight_bytes;
    if (bytes <= free_bytes) {
      pinned[c.index] = true;
      free_bytes -= bytes;
      *pinned_bytes += bytes;
    }
  }
  return pinned;
}

}  // namespace

Projection project(const std::vector<LayerDemand>& layers, const Accelerator& accelerator) {
  validate(accelerator);
  for (const LayerDemand& layer : layers) validate(layer);

  Projection result;
  const std::vector<bool> pinned = pin_weights(layers, accelerator, &result.onchip_weight_bytes);
  const double free_for_activations = accelerator.onchip_bytes - result.onchip_weight_bytes;
  double ops = 0;
  for (size_t i = 0; i < layers.size(); ++i) {
    const LayerDemand& layer = layers[i];
    LayerProjection p = layer_time(layer, accelerator, pinned[i], false);
    if (layer.activation_bytes > 0 && layer.activation_bytes <= free_for_activations) {
      LayerProjection onchip = layer_time(layer, accelerator, pinned[i], true);
      if (onchip.time_s <= p.time_s) p = std::move(onchip);
    }
    ops += layer.ops;
    result.time_s += p.time_s;
    result.layers.push_back(std::move(p));
  }
  result.achieved_ops_per_s = result.time_s > 0 ? ops / result.time_s : 0.0;
  return result;
}

}  // namespace plumb::analysis
