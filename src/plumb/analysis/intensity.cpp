// Facebook Table 1 arithmetic intensities (operations per element of traffic, weights only and
// weights plus activations) per layer, per model, and mean / minimum over layers.
#include "plumb/analysis/intensity.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "plumb/analysis/input_checks.h"
#include "plumb/core/errors.h"

namespace plumb::analysis {
namespace {

void validate(const LayerTraffic& layer) {
  const std::pair<const char*, double> fields[] = {
      {"ops", layer.ops},
      {"weight_elements", layer.weight_elements},
      {"activation_elements", layer.activation_elements},
      {"element_bytes", layer.element_bytes}};
  for (const auto& [field, value] : fields) {
    if (!(value >= 0) || !std::isfinite(value)) {
      throw UsageError("intensity: layer '" + layer.layer + "' has " + field + " = " +
                       number_text(value) + "; counts must be finite and non-negative");
    }
  }
  if (!(layer.element_bytes > 0)) {
    throw UsageError("intensity: layer '" + layer.layer +
                     "' has element_bytes = 0; give the element size (4 for fp32, 1 for int8)");
  }
  if (layer.ops > 0 && layer.weight_elements == 0 && layer.activation_elements == 0) {
    throw UsageError("intensity: layer '" + layer.layer + "' has " + number_text(layer.ops) +
                     " ops but no weight or activation elements; its traffic is missing");
  }
}

// ops / traffic with the two degenerate cases named: no ops -> 0, ops but no traffic -> +inf.
double per_element(double ops, double traffic) {
  if (ops == 0) return 0;
  if (traffic == 0) return std::numeric_limits<double>::infinity();
  return ops / traffic;
}

struct MeanMin {
  double sum = 0;
  double min = std::numeric_limits<double>::infinity();
  int count = 0;
  void add(double x) {
    sum += x;
    min = std::min(min, x);
    ++count;
  }
  double mean() const { return count > 0 ? sum / count : 0.0; }
  double minimum() const { return count > 0 ? min : 0.0; }
};

}  // namespace

IntensitySummary summarize_intensity(const std::vector<LayerTraffic>& layers) {
  IntensitySummary summary;
  double ops = 0, weights = 0, activations = 0, weight_bytes = 0, activation_bytes = 0;
  MeanMin per_weight, per_weight_and_activation;
  for (const LayerTraffic& layer : layers) {
    validate(layer);
    LayerIntensity out;
    out.layer = layer.layer;
    out.ops = layer.ops;
    out.per_weight = per_element(layer.ops, layer.weight_elements);
    out.per_weight_and_activation =
        per_element(layer.ops, layer.weight_elements + layer.activation_elements);
    out.per_weight_byte = out.per_weight / layer.element_bytes;
    out.per_weight_and_activation_byte = out.per_weight_and_activation / layer.element_bytes;

    if (layer.weight_elements > 0) per_weight.add(out.per_weight);
    if (layer.ops > 0) per_weight_and_activation.add(out.per_weight_and_activation);

    ops += layer.ops;
    weights += layer.weight_elements;
    activations += layer.activation_elements;
    weight_bytes += layer.weight_elements * layer.element_bytes;
    activation_bytes += layer.activation_elements * layer.element_bytes;
    summary.layers.push_back(std::move(out));
  }
  summary.model_per_weight = per_element(ops, weights);
  summary.model_per_weight_and_activation = per_element(ops, weights + activations);
  summary.model_per_weight_byte = per_element(ops, weight_bytes);
  summary.model_per_weight_and_activation_byte = per_element(ops, weight_bytes + activation_bytes);
  summary.mean_per_weight = per_weight.mean();
  summary.min_per_weight = per_weight.minimum();
  summary.mean_per_weight_and_activation = per_weight_and_activation.mean();
  summary.min_per_weight_and_activation = per_weight_and_activation.minimum();
  summary.layers_with_weights = per_weight.count;
  summary.layers_with_ops = per_weight_and_activation.count;
  return summary;
}

}  // namespace plumb::analysis
