// ResNet-50 v1.5 (He et al. 2016, with the stride on the 3x3 convolution as in torchvision),
// the image-classification model of TBD, ParaDnn and the Facebook inference study.
//
// Module names and initialisation follow torchvision.models.resnet50 exactly
// ("layer3.2.conv2", "downsample.0" ...), so parameter names and the count (25,557,032) match
// layer by layer. Training uses torchvision's reference recipe: SGD, lr 0.1, momentum 0.9,
// weight decay 1e-4, cross-entropy over 1000 classes.
#include "plumb/workloads/tbd/resnet50.h"

#include <string>

#include "plumb/core/layer_scope.h"
#include "plumb/workloads/common/classifier_model.h"

namespace plumb::workloads {
namespace {

namespace nn = torch::nn;

nn::Conv2d conv(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t padding) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, kernel).stride(stride).padding(padding).bias(false));
}

// Bottleneck: 1x1 reduce -> 3x3 (carries the stride: v1.5) -> 1x1 expand (x4), plus a
// projection shortcut when shape changes.
struct BottleneckImpl : nn::Module {
  static constexpr int64_t kExpansion = 4;

  BottleneckImpl(const std::string& path, int64_t in, int64_t width, int64_t stride)
      : path_(path),
        conv1(register_module("conv1", conv(in, width, 1, 1, 0))),
        bn1(register_module("bn1", nn::BatchNorm2d(width))),
        conv2(register_module("conv2", conv(width, width, 3, stride, 1))),
        bn2(register_module("bn2", nn::BatchNorm2d(width))),
        conv3(register_module("conv3", conv(width, width * kExpansion, 1, 1, 0))),
        bn3(register_module("bn3", nn::BatchNorm2d(width * kExpansion))) {
    if (stride != 1 || in != width * kExpansion) {
      downsample =
          register_module("downsample", nn::Sequential(conv(in, width * kExpansion, 1, stride, 0),
                                                       nn::BatchNorm2d(width * kExpansion)));
    }
  }

  // x: [B, in, H, W] -> [B, 4*width, H/stride, W/stride]
  torch::Tensor forward(const torch::Tensor& x) {
    // In-place ReLU and residual add, as torchvision (ReLU(inplace=True), out += identity):
    // they save an allocation and a full pass over the feature map each.
    auto out = run_layer(path_ + ".bn1", bn1, run_layer(path_ + ".conv1", conv1, x));
    out.relu_();
    out = run_layer(path_ + ".bn2", bn2, run_layer(path_ + ".conv2", conv2, out));
    out.relu_();
    out = run_layer(path_ + ".bn3", bn3, run_layer(path_ + ".conv3", conv3, out));
    torch::Tensor identity = x;
    if (!downsample.is_empty()) identity = run_layer(path_ + ".downsample", downsample, x);
    out += identity;
    return out.relu_();
  }

  std::string path_;
  nn::Conv2d conv1;
  nn::BatchNorm2d bn1;
  nn::Conv2d conv2;
  nn::BatchNorm2d bn2;
  nn::Conv2d conv3;
  nn::BatchNorm2d bn3;
  nn::Sequential downsample{nullptr};
};
TORCH_MODULE(Bottleneck);

struct ResNetImpl : nn::Module {
  // blocks per stage: {3, 4, 6, 3} for ResNet-50.
  ResNetImpl(const std::vector<int64_t>& blocks, int64_t classes)
      : conv1(register_module("conv1", conv(3, 64, 7, 2, 3))),
        bn1(register_module("bn1", nn::BatchNorm2d(64))),
        maxpool(register_module("maxpool",
                                nn::MaxPool2d(nn::MaxPool2dOptions(3).stride(2).padding(1)))) {
    int64_t in = 64;
    const int64_t widths[4] = {64, 128, 256, 512};
    for (int stage = 0; stage < 4; ++stage) {
      const std::string name = "layer" + std::to_string(stage + 1);
      nn::Sequential seq;
      for (int64_t b = 0; b < blocks[stage]; ++b) {
        const int64_t stride = (stage > 0 && b == 0) ? 2 : 1;
        seq->push_back(Bottleneck(name + "." + std::to_string(b), in, widths[stage], stride));
        in = widths[stage] * BottleneckImpl::kExpansion;
      }
      stages.push_back(register_module(name, seq));
    }
    fc = register_module("fc", nn::Linear(in, classes));
    // torchvision: Kaiming-normal (fan_out, relu) convolutions, BN weight 1 / bias 0.
    for (auto& m : modules(/*include_self=*/false)) {
      if (auto* c = m->as<nn::Conv2d>()) {
        nn::init::kaiming_normal_(c->weight, 0.0, torch::kFanOut, torch::kReLU);
      } else if (auto* bn = m->as<nn::BatchNorm2d>()) {
        nn::init::ones_(bn->weight);
        nn::init::zeros_(bn->bias);
      }
    }
  }

  // x: [B, 3, 224, 224] -> logits [B, classes]
  torch::Tensor forward(const torch::Tensor& x) {
    auto out = run_layer("bn1", bn1, run_layer("conv1", conv1, x));  // [B,64,112,112]
    out.relu_();
    out = run_layer("maxpool", maxpool, out);   // [B,64,56,56]
    for (size_t i = 0; i < stages.size(); ++i)  // -> [B,256,56,56] .. [B,2048,7,7]
      out = run_layer("layer" + std::to_string(i + 1), stages[i], out);
    {
      LayerScope scope("avgpool");
      out = scope.output(torch::adaptive_avg_pool2d(out, {1, 1}).flatten(1));  // [B, 2048]
    }
    return run_layer("fc", fc, out);  // [B, classes]
  }

  nn::Conv2d conv1;
  nn::BatchNorm2d bn1;
  nn::MaxPool2d maxpool;
  std::vector<nn::Sequential> stages;
  nn::Linear fc{nullptr};
};
TORCH_MODULE(ResNet);

}  // namespace

Workload make_resnet50() {
  Workload w;
  w.info = {"resnet50",
            {"tbd", "paradnn-real", "inference"},
            "image classification",
            "ResNet-50 v1.5 (bottleneck blocks 3-4-6-3, stride on the 3x3 conv) on 224x224 "
            "ImageNet-shaped images, torchvision's layer names and initialisation",
            "He et al., Deep Residual Learning, CVPR 2016; v1.5 and training recipe from "
            "torchvision's reference (SGD lr 0.1, momentum 0.9, wd 1e-4); used by TBD, ParaDnn "
            "and the Facebook inference study",
            "images/s",
            4,
            {"batch=2", "image_size=32", "classes=10"}};
  w.default_config = [] {
    Config c =
        image_classifier_config(32, "mini-batch size (torchvision reference: 32 per GPU)", 32);
    c.add_double("lr", 0.1, "SGD learning rate (torchvision reference)");
    c.add_double("momentum", 0.9, "SGD momentum");
    c.add_double("weight_decay", 1e-4, "L2 weight decay");
    return c;
  };
  w.build = [](const Config& c, const torch::Device& device) -> std::unique_ptr<Model> {
    config_dtype(c);
    ResNet net(std::vector<int64_t>{3, 4, 6, 3}, c.get_int("classes"));
    auto make_batch = image_batches(c, device);
    auto optimizer_for = sgd_from_config(c);
    return make_classifier_model(net, device, make_batch, optimizer_for);
  };
  return w;
}

}  // namespace plumb::workloads
