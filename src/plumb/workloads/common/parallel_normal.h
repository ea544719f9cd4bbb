// Gaussian weights drawn on every intra-op thread. LibTorch 1.13 draws normal_ on one thread,
// and a billion-weight language model then spends seconds per build in the draw alone (and
// every characterization item builds its model anew).
#pragma once

#include <torch/torch.h>

namespace plumb::workloads {

// Fills `t` (contiguous) with N(0, std) in place. The tensor is cut into fixed chunks, each
// drawn from its own generator seeded from one draw of LibTorch's default generator, so the
// weights depend on the seed alone, not on how many threads drew them.
void fill_normal_parallel(torch::Tensor& t, double std);

}  // namespace plumb::workloads
