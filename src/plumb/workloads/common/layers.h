// Layer helpers that several networks share: factories and output-size arithmetic.
#pragma once

#include <string>

#include <torch/torch.h>

namespace plumb::workloads {

// nn.ReLU(inplace=True), as torchvision uses it: the activation overwrites its input, so no
// feature map is allocated for it. Safe after a convolution, batch norm or linear layer,
// whose backward needs its input, not its output.
torch::nn::ReLU inplace_relu();

// A 2-D convolution. `bias` is false where batch norm follows: its shift makes a bias
// redundant (torchvision's ResNets, the TF detection backbones).
torch::nn::Conv2d conv2d(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t padding,
                         bool bias, int64_t groups = 1);

// Padding that keeps an odd kernel's output the input's size at stride 1 (TensorFlow's
// padding="SAME", as tflib's and TF-slim's convolutions use it); at stride 2 it halves it.
constexpr int64_t same_padding(int64_t kernel) {
  return kernel / 2;
}

// He-normal weights for a convolution that feeds a ReLU (fan_out mode, as the TF detection
// models' backbones initialise them); returns the same module.
torch::nn::Conv2d he_initialised(torch::nn::Conv2d conv);

// Runs each child of `seq` as its own layer "<prefix>.<i>", so time and FLOPs are attributed
// to "features.0", "features.1" ... as torchvision names the modules, not to one opaque block.
torch::Tensor run_children(const std::string& prefix, torch::nn::Sequential& seq, torch::Tensor x);

// Output length of an unpadded ("valid") convolution along one dimension.
int64_t conv_out(int64_t in, int64_t kernel, int64_t stride);

}  // namespace plumb::workloads
