// The work of one inference forward pass, from the cost model over the operators really
// called: MACs of the GEMM-like operators (convolution, linear, matrix products — the
// convention torchvision and most papers quote) and FLOPs of every costed operator. Used for
// `plumb info`'s forward_macs / forward_flops and the workload fidelity tests.
#pragma once

#include <vector>

#include "plumb/core/layer_scope.h"
#include "plumb/core/workload.h"

namespace plumb::profile {

struct ForwardCost {
  double macs = 0;
  double flops = 0;
};

// Runs one inference step of `model` on one of its batches (eval mode, InferenceMode) with the
// operator observer attached. Build the model at batch 1 for per-example figures. With
// `layers`, the same step also records each layer's output (a LayerRecorder), so a caller that
// needs both pays for one forward pass (plumb info deepspeech2: 36.5 s with two, 20.4 s with one).
ForwardCost forward_cost(Model& model, std::vector<LayerRecord>* layers = nullptr);

}  // namespace plumb::profile
