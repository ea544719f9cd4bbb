// Shared layer helpers (see layers.h).
#include "plumb/workloads/common/layers.h"

#include "plumb/core/layer_scope.h"

namespace plumb::workloads {

torch::nn::ReLU inplace_relu() {
  return torch::nn::ReLU(torch::nn::ReLUOptions().inplace(true));
}

torch::nn::Conv2d conv2d(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t padding,
                         bool bias, int64_t groups) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, kernel)
                               .stride(stride)
                               .padding(padding)
                               .groups(groups)
                               .bias(bias));
}

torch::nn::Conv2d he_initialised(torch::nn::Conv2d conv) {
  torch::nn::init::kaiming_normal_(conv->weight, 0.0, torch::kFanOut, torch::kReLU);
  return conv;
}

int64_t conv_out(int64_t in, int64_t kernel, int64_t stride) {
  return (in - kernel) / stride + 1;
}

torch::Tensor run_children(const std::string& prefix, torch::nn::Sequential& seq, torch::Tensor x) {
  int64_t i = 0;
  for (auto& child : *seq) {
    LayerScope scope(prefix + "." + std::to_string(i++));
    x = scope.output(child.forward(x));
  }
  return x;
}

}  // namespace plumb::workloads
