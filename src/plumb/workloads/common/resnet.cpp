// The ResNet / ResNeXt family shared by classifiers and detection trunks (see resnet.h).
#include "plumb/workloads/common/resnet.h"

#include <string>

#include "plumb/core/layer_scope.h"
#include "plumb/workloads/common/layers.h"

namespace plumb::workloads {
namespace {

namespace nn = torch::nn;

// torchvision's FrozenBatchNorm2d: y = x * w / sqrt(var + eps) + (b - mean * w / sqrt(var + eps))
// with all four tensors as buffers (not trained, not updated).
struct FrozenBatchNorm2dImpl : nn::Module {
  explicit FrozenBatchNorm2dImpl(int64_t channels)
      : weight(register_buffer("weight", torch::ones({channels}))),
        bias(register_buffer("bias", torch::zeros({channels}))),
        running_mean(register_buffer("running_mean", torch::zeros({channels}))),
        running_var(register_buffer("running_var", torch::ones({channels}))) {}

  // x: [B, C, H, W] -> same shape
  torch::Tensor forward(const torch::Tensor& x) {
    auto scale = weight * (running_var + 1e-5).rsqrt();  // [C]
    auto shift = bias - running_mean * scale;            // [C]
    return x * scale.reshape({1, -1, 1, 1}) + shift.reshape({1, -1, 1, 1});
  }

  torch::Tensor weight, bias, running_mean, running_var;
};
TORCH_MODULE(FrozenBatchNorm2d);

nn::AnyModule batch_norm(int64_t channels, bool frozen) {
  if (frozen) return nn::AnyModule(FrozenBatchNorm2d(channels));
  return nn::AnyModule(nn::BatchNorm2d(channels));
}

torch::Tensor run_norm(const std::string& name, nn::AnyModule& norm, const torch::Tensor& x) {
  LayerScope scope(name);
  return scope.output(norm.forward(x));
}

}  // namespace

ResidualBlockImpl::ResidualBlockImpl(const std::string& path, const ResNetSpec& spec, int64_t in,
                                     int64_t planes, int64_t stride, bool force_projection)
    : path_(path) {
  const bool frozen = spec.frozen_batch_norm;
  if (spec.bottleneck) {
    const int64_t width = planes * spec.width_per_group / 64 * spec.groups;
    out_channels = planes * kBottleneckExpansion;
    convs_ = {conv2d(in, width, 1, 1, 0, /*bias=*/false),
              conv2d(width, width, 3, stride, 1, /*bias=*/false, spec.groups),
              conv2d(width, out_channels, 1, 1, 0, /*bias=*/false)};
    norms_ = {batch_norm(width, frozen), batch_norm(width, frozen),
              batch_norm(out_channels, frozen)};
  } else {
    out_channels = planes;
    convs_ = {conv2d(in, planes, 3, stride, 1, /*bias=*/false),
              conv2d(planes, planes, 3, 1, 1, /*bias=*/false)};
    norms_ = {batch_norm(planes, frozen), batch_norm(planes, frozen)};
  }
  for (size_t i = 0; i < convs_.size(); ++i) {
    register_module("conv" + std::to_string(i + 1), convs_[i]);
    register_module("bn" + std::to_string(i + 1), norms_[i].ptr());
  }
  if (force_projection || stride != 1 || in != out_channels) {
    // Registered as a Sequential so the parameters are "downsample.0.weight" ... as
    // torchvision's; the members share its modules so each runs under its own layer name.
    down_conv = conv2d(in, out_channels, 1, stride, 0, /*bias=*/false);
    down_norm = batch_norm(out_channels, frozen);
    nn::Sequential down;
    down->push_back(down_conv);
    down->push_back(down_norm);
    register_module("downsample", down);
  }
}

torch::Tensor ResidualBlockImpl::forward(const torch::Tensor& x) {
  LayerScope scope(path_);  // the ReLUs and the residual add are attributed to the block
  torch::Tensor out = x;
  for (size_t i = 0; i < convs_.size(); ++i) {
    const std::string n = std::to_string(i + 1);
    out = run_layer(path_ + ".conv" + n, convs_[i], out);
    out = run_norm(path_ + ".bn" + n, norms_[i], out);
    // In-place ReLU and residual add, as torchvision (ReLU(inplace=True), out += identity):
    // each saves an allocation and a pass over the feature map.
    if (i + 1 < convs_.size()) out.relu_();
  }
  torch::Tensor identity = x;
  if (!down_conv.is_empty()) {
    identity = run_norm(path_ + ".downsample.1", down_norm,
                        run_layer(path_ + ".downsample.0", down_conv, x));
  }
  out += identity;
  return scope.output(out.relu_());
}

void ResidualBlockImpl::zero_init_last_norm() {
  auto* bn = norms_.back().ptr()->as<nn::BatchNorm2d>();
  TORCH_CHECK(bn != nullptr, "zero_init_last_norm: the block's batch norm is frozen");
  torch::NoGradGuard no_grad;
  bn->weight.zero_();
}

ResNetSpec resnet34_spec() {
  ResNetSpec s;
  s.bottleneck = false;
  s.blocks = {3, 4, 6, 3};
  return s;
}

ResNetSpec resnet50_spec() {
  ResNetSpec s;
  s.blocks = {3, 4, 6, 3};
  return s;
}

ResNetSpec resnet101_spec() {
  ResNetSpec s;
  s.blocks = {3, 4, 23, 3};
  return s;
}

ResNetImpl::ResNetImpl(const ResNetSpec& spec, int64_t classes)
    : conv1(register_module("conv1", conv2d(3, 64, 7, 2, 3, /*bias=*/false))),
      bn1(batch_norm(64, spec.frozen_batch_norm)),
      maxpool(
          register_module("maxpool", nn::MaxPool2d(nn::MaxPool2dOptions(3).stride(2).padding(1)))) {
  register_module("bn1", bn1.ptr());
  int64_t in = 64;
  const int64_t planes[4] = {64, 128, 256, 512};
  for (int stage = 0; stage < 4; ++stage) {
    const std::string name = "layer" + std::to_string(stage + 1);
    nn::Sequential seq;
    for (int64_t b = 0; b < spec.blocks.at(stage); ++b) {
      const int64_t stride = (stage > 0 && b == 0) ? 2 : 1;
      ResidualBlock block(name + "." + std::to_string(b), spec, in, planes[stage], stride);
      in = block->out_channels;
      seq->push_back(block);
    }
    stages_.push_back(register_module(name, seq));
    stage_channels_.push_back(in);
  }
  if (classes > 0) fc = register_module("fc", nn::Linear(in, classes));
  for (auto& m : modules(/*include_self=*/false)) {
    if (auto* c = m->as<nn::Conv2d>()) {
      nn::init::kaiming_normal_(c->weight, 0.0, torch::kFanOut, torch::kReLU);
    } else if (auto* bn = m->as<nn::BatchNorm2d>()) {
      nn::init::ones_(bn->weight);
      nn::init::zeros_(bn->bias);
    }
  }
}

torch::Tensor ResNetImpl::stem(const torch::Tensor& x) {
  auto out = run_norm("bn1", bn1, run_layer("conv1", conv1, x));  // [B,64,H/2,W/2]
  out.relu_();
  return run_layer("maxpool", maxpool, out);  // [B,64,H/4,W/4]
}

torch::Tensor ResNetImpl::forward(const torch::Tensor& x) {
  TORCH_CHECK(!fc.is_empty(), "ResNet built as a trunk (classes = 0) has no classifier");
  auto out = stem(x);
  // bottleneck: [B,256,H/4,W/4] .. [B,2048,H/32,W/32]; basic: 64 .. 512 channels
  for (size_t i = 0; i < stages_.size(); ++i)
    out = run_layer("layer" + std::to_string(i + 1), stages_[i], out);
  {
    LayerScope scope("avgpool");
    out = scope.output(torch::adaptive_avg_pool2d(out, {1, 1}).flatten(1));  // [B, C5]
  }
  return run_layer("fc", fc, out);  // [B, classes]
}

std::vector<torch::Tensor> ResNetImpl::features(const torch::Tensor& x, int from_stage) {
  std::vector<torch::Tensor> out;
  auto y = stem(x);
  for (size_t i = 0; i < stages_.size(); ++i) {
    y = run_layer("layer" + std::to_string(i + 1), stages_[i], y);
    if (static_cast<int>(i) + 1 >= from_stage) out.push_back(y);
  }
  return out;
}

void ResNetImpl::freeze_below(int first_trainable_stage) {
  conv1->weight.set_requires_grad(false);
  for (auto& p : bn1.ptr()->parameters()) p.set_requires_grad(false);
  for (int stage = 1; stage < first_trainable_stage; ++stage)
    for (auto& p : stages_.at(stage - 1)->parameters()) p.set_requires_grad(false);
}

}  // namespace plumb::workloads
