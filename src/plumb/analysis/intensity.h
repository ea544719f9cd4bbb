// Arithmetic intensity as the Facebook DL-inference paper's Table 1 reports it: operations per
// ELEMENT of data traffic (not per byte), counting (i) only weights as traffic — activations
// stay in a level closer to compute — and (ii) weights plus activations; per layer, for the
// whole model, and average / minimum over layers. Pure functions, no LibTorch.
//
// Operations are plumb FLOPs (a MAC is 2), so a 1x1 convolution at a 7x7 output has 98 ops
// per weight, which the paper rounds into its ResNet-50 "min. 100".
#pragma once

#include <string>
#include <vector>

namespace plumb::analysis {

struct LayerTraffic {
  std::string layer;
  double ops = 0;                  // FLOPs, MAC = 2
  double weight_elements = 0;      // parameters read by the layer (incl. bias where it has one)
  double activation_elements = 0;  // input + output activations of the layer
  double element_bytes = 0;        // bytes per element, for the per-byte figures (> 0)
};

struct LayerIntensity {
  std::string layer;
  double ops = 0;
  // ops / weight elements; +inf when the layer has ops but no weights, 0 when it has no ops.
  double per_weight = 0;
  // ops / (weight + activation elements); 0 when the layer has no ops.
  double per_weight_and_activation = 0;
  // The same per byte of traffic (divided by element_bytes): FLOP/byte, comparable to roofline.
  double per_weight_byte = 0;
  double per_weight_and_activation_byte = 0;
};

struct IntensitySummary {
  std::vector<LayerIntensity> layers;  // in input order
  // Whole model: total ops / total traffic, i.e. the ops-weighted average. Every layer's
  // activations count, an activation passed between layers twice (written, then read), as it
  // is in the per-layer figures. +inf / 0 as for a layer. These, not the unweighted means,
  // reproduce the paper's "avg." columns: ResNet-50 (conv + FC, batch 1) gives 321 and 173
  // ops per element against the paper's 303 and 164, while its mean over layers is ~2,300.
  double model_per_weight = 0;
  double model_per_weight_and_activation = 0;
  double model_per_weight_byte = 0;  // total ops / total weight bytes
  double model_per_weight_and_activation_byte = 0;
  // Unweighted mean and minimum of the per-layer figures, over these layers:
  // per_weight: layers with weight_elements > 0 (the others have no weight traffic, +inf); a
  // weighted layer without ops (a plain embedding gather) counts at 0: its weights are traffic;
  // per_weight_and_activation: layers with ops > 0 (a layer that computes nothing, e.g. a
  // reshape, would otherwise set the minimum to 0 without costing any compute).
  // 0 when no layer qualifies.
  double mean_per_weight = 0;
  double min_per_weight = 0;
  double mean_per_weight_and_activation = 0;
  double min_per_weight_and_activation = 0;
  int layers_with_weights = 0;
  int layers_with_ops = 0;
};

// Throws UsageError for a negative or non-finite count, element_bytes <= 0, or a layer with
// ops > 0 but no data at all (no weights and no activations: the traffic must be missing).
IntensitySummary summarize_intensity(const std::vector<LayerTraffic>& layers);

}  // namespace plumb::analysis
