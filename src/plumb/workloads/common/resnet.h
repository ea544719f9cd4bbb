// The ResNet family as torchvision builds it (He et al. 2016; ResNeXt, Xie et al. 2017): basic or
// bottleneck blocks in four stages, with grouped 3x3 convolutions and a per-group width for
// ResNeXt. One implementation serves the classifiers (residual = ResNet-34, resnet50,
// resnext101_32x4d/32x48d) and the detection trunks (ResNet-50/101 feature maps C2..C5).
//
// Module and parameter names follow torchvision ("layer3.2.conv2", "layer2.0.downsample.0"),
// so parameter counts can be compared name by name; initialisation is torchvision's
// (Kaiming-normal fan-out convolutions, BN weight 1 / bias 0, PyTorch's default for fc).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace plumb::workloads {

struct ResNetSpec {
  bool bottleneck = true;        // Bottleneck (1x1-3x3-1x1, expansion 4) or BasicBlock (3x3-3x3)
  std::vector<int64_t> blocks;   // per stage: {3,4,6,3} ResNet-34/50, {3,4,23,3} ResNet-101
  int64_t groups = 1;            // ResNeXt cardinality (32 for 32x4d)
  int64_t width_per_group = 64;  // ResNeXt group width d (4 for 32x4d, 48 for 32x48d)
  // Batch norm that does not learn or update statistics (torchvision's FrozenBatchNorm2d as the
  // detection trunks use it): weight/bias are buffers, so they are not trainable parameters.
  bool frozen_batch_norm = false;
};

ResNetSpec resnet34_spec();
ResNetSpec resnet50_spec();
ResNetSpec resnet101_spec();

// One residual block, basic (conv1-conv2) or bottleneck (conv1-conv2-conv3); the 3x3
// convolution carries the stride (v1.5, as torchvision) and the groups (ResNeXt). A projection
// shortcut "downsample.0/1" (1x1 conv + BN: the paper's option B) when the shape changes, or
// always with `force_projection` (ParaDnn's resnet_model.py projects in every group's first
// block). Weights keep LibTorch's default initialisation: the network that owns the blocks
// initialises them its source's way.
class ResidualBlockImpl : public torch::nn::Module {
 public:
  static constexpr int64_t kBottleneckExpansion = 4;

  ResidualBlockImpl(const std::string& path, const ResNetSpec& spec, int64_t in, int64_t planes,
                    int64_t stride, bool force_projection = false);

  // x: [B, in, H, W] -> [B, out_channels, H/stride, W/stride]
  torch::Tensor forward(const torch::Tensor& x);

  // Zeroes the scale of the block's last batch norm, so the block starts as the identity
  // (torchvision's zero_init_residual; ParaDnn's resnet_model.py). Not for frozen norms.
  void zero_init_last_norm();

  int64_t out_channels = 0;

 private:
  std::string path_;
  std::vector<torch::nn::Conv2d> convs_;
  std::vector<torch::nn::AnyModule> norms_;
  torch::nn::Conv2d down_conv{nullptr};
  torch::nn::AnyModule down_norm;
};
TORCH_MODULE(ResidualBlock);

class ResNetImpl : public torch::nn::Module {
 public:
  // classes == 0 builds the trunk only (no fc): for detection backbones.
  ResNetImpl(const ResNetSpec& spec, int64_t classes);

  // x: [B, 3, H, W] -> logits [B, classes]
  torch::Tensor forward(const torch::Tensor& x);

  // x: [B, 3, H, W] -> outputs of layer1..layer4 (C2..C5): [B, c_i, H/4, W/4] .. [B, c_4,
  // H/32, W/32], with c_i = stage_channels(i). `from_stage` (1..4) skips the outputs of
  // earlier stages (they are still computed: each stage feeds the next).
  std::vector<torch::Tensor> features(const torch::Tensor& x, int from_stage = 1);

  // Output channels of stage 1..4 (64..512 basic, 256..2048 bottleneck).
  int64_t stage_channels(int stage) const { return stage_channels_.at(stage - 1); }

  // Makes the stem and stages [1, first_trainable_stage) untrainable, as detection recipes
  // do (torchvision trainable_backbone_layers=3 freezes the stem and layer1).
  void freeze_below(int first_trainable_stage);

 private:
  torch::Tensor stem(const torch::Tensor& x);

  torch::nn::Conv2d conv1{nullptr};
  torch::nn::AnyModule bn1;
  torch::nn::MaxPool2d maxpool{nullptr};
  std::vector<torch::nn::Sequential> stages_;
  std::vector<int64_t> stage_channels_;
  torch::nn::Linear fc{nullptr};
};
TORCH_MODULE(ResNet);

}  // namespace plumb::workloads
