// Layer helpers that several networks share: factories and output-size arithmetic.
#pragma once

#include <torch/torch.h>

namespace plumb::workloads {

// nn.ReLU(inplace=True), as torchvision uses it: the activation overwrites its input, so no
// feature map is allocated for it. Safe after a convolution, batch norm or linear layer,
// whose backward needs its input, not its output.
torch::nn::ReLU inplace_relu();

// Output length of an unpadded ("valid") convolution along one dimension.
int64_t conv_out(int64_t in, int64_t kernel, int64_t stride);

}  // namespace plumb::workloads
