// Realized fusion (plumb analyze fusion): for the patterns LibTorch 1.13 already runs as one
// kernel on the CPU, the fused kernel is timed against the unfused sequence on the shapes a
// workload's graph recorded, so a projected saving can be set beside a measured one.
//   conv_bn     conv{1,2,3}d -> batch_norm (inference)  vs  the same convolution with the batch
//               norm folded into its weights and bias
//   linear_relu linear (or addmm) -> relu         vs  at::_addmm_activation (addmm with ReLU)
//   add_relu    add -> relu                       vs  at::_add_relu
//   softmax     amax, sub, exp, sum, div          vs  at::softmax
// LSTM/GRU cells have no fused CPU kernel in LibTorch 1.13 (its fused cell is CUDA-only; on the
// CPU lstm_cell runs as separate addmm, chunk, sigmoid, tanh and mul operators), so there is
// nothing to realize for them here.
#pragma once

#include <string>
#include <vector>

#include "plumb/profile/op_graph.h"

namespace plumb::profile {

struct FusedKernelCheck {
  std::string kind;      // "conv_bn", "linear_relu", "add_relu", "softmax"
  std::string shapes;    // the model-level calls it was built from (signatures, "; " between)
  std::string unfused;   // what runs unfused: "conv2d, batch_norm"
  std::string fused_op;  // what runs fused: "conv2d (batch norm folded into its weights)"
  std::string dtype;     // of the inputs ("Float", "BFloat16")
  int threads = 1;
  int repetitions = 0;   // timed calls per side, interleaved
  double unfused_s = 0;  // median per call
  double fused_s = 0;
  double max_abs_diff = 0;  // between the two outputs (a fused kernel computes the same thing)
  StepGraph unfused_graph;  // the unfused sequence's data-flow graph (one call, observed)
};

// The realizable kind a mined pattern calls for, from its labels (short names in canonical
// order, profile::short_op_name) and edges: "" when none.
std::string fused_kernel_kind(const std::vector<std::string>& labels,
                              const std::vector<std::pair<int, int>>& edges);

// Builds inputs of the recorded shapes and dtypes (random values, positive variances), times the
// unfused and fused forms at `threads` intra-op threads for about `seconds` in all, and captures
// the unfused form's graph. Throws std::invalid_argument when the signatures do not describe the
// kind's operators (a pattern without the needed calls, an argument it cannot rebuild).
FusedKernelCheck run_fused_kernel_check(const std::string& kind,
                                        const std::vector<std::string>& labels,
                                        const std::vector<std::string>& signatures, int threads,
                                        double seconds = 1.0);

}  // namespace plumb::profile
