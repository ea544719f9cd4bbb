// Shared layer helpers (see layers.h).
#include "plumb/workloads/common/layers.h"

namespace plumb::workloads {

torch::nn::ReLU inplace_relu() {
  return torch::nn::ReLU(torch::nn::ReLUOptions().inplace(true));
}

int64_t conv_out(int64_t in, int64_t kernel, int64_t stride) {
  return (in - kernel) / stride + 1;
}

}  // namespace plumb::workloads
