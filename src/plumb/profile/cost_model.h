// The operator cost model: FLOPs and bytes of a leaf operator call from its input/output
// metadata and arguments (stride, padding, groups, dilation, transposes).
//
// Conventions (DESIGN.md): a multiply-accumulate is 2 FLOPs; elementwise ops count their real
// arithmetic per element; data movement is 0 FLOPs but its bytes; bytes = every input read
// once + every output written once, at the real element size. An operator without a cost
// function is reported as not costed (never a silent 0).
#pragma once

#include <string>
#include <vector>

#include "plumb/profile/op_call.h"

namespace plumb::profile {

struct OpCost {
  bool costed = false;
  double flops = 0;
  double macs = 0;  // multiply-accumulates of GEMM-like work (conv, linear, matmul), for
                    // cross-checks against published MAC counts
  double bytes_read = 0;
  double bytes_written = 0;
};

OpCost cost_of(const OpCall& call);

// Names of operators the cost model knows (for listings and tests).
std::vector<std::string> costed_operator_names();

}  // namespace plumb::profile
