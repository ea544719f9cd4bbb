// The operator cost model: FLOPs and bytes of a leaf operator call from its input/output
// metadata and arguments (stride, padding, groups, dilation, transposes).
//
// Conventions (docs/architecture.md, "Counting work"): a multiply-accumulate is 2 FLOPs;
// elementwise ops count their real arithmetic per element; data movement is 0 FLOPs but its bytes;
// bytes = every input read once + every output written once, at the real element size. An operator
// without a cost function is reported as not costed (never a silent 0).
#pragma once

#include <string>
#include <vector>

#include "plumb/core/gemm_shape.h"
#include "plumb/profile/op_call.h"

namespace plumb::profile {

// One matrix product inside an operator call: a convolution is its im2col GEMM (forward:
// output pixels x output channels x input channels * kernel), its backward two more
// (grad_input, grad_weight), a recurrent cell one per weight matrix.
struct OpGemm {
  GemmShape shape;
  std::string role;  // "forward", "grad_input", "grad_weight"
};

struct OpCost {
  bool costed = false;
  double flops = 0;
  double macs = 0;  // multiply-accumulates of GEMM-like work (conv, linear, matmul), for
                    // cross-checks against published MAC counts
  double bytes_read = 0;
  double bytes_written = 0;
  std::vector<OpGemm> gemms;  // GEMM-like operators only; their MACs sum to `macs`
};

OpCost cost_of(const OpCall& call);

// Names of operators the cost model knows (for listings and tests).
std::vector<std::string> costed_operator_names();

}  // namespace plumb::profile
