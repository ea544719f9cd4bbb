// residual: Fathom's 34-layer residual network (He, Zhang, Ren & Sun, Deep Residual Learning for
// Image Recognition, CVPR 2016 / arXiv 2015, Table 1 "34-layer") on 224x224 ImageNet-shaped
// images.
//
// Layers as torchvision.models.resnet34: a 7x7/2 stem convolution and 3x3/2 max pool, then
// BasicBlocks (two 3x3 convolutions with batch norm, identity shortcut) in stages of 3-4-6-3
// blocks with 64-128-256-512 channels; the first block of stages 2-4 has stride 2 on its first
// convolution and a projection shortcut (1x1 convolution + batch norm: the paper's option B);
// global average pool and one fully-connected layer. Module names ("layer3.2.conv2",
// "layer2.0.downsample.0" ...), initialisation (Kaiming-normal fan-out convolutions, BN weight 1
// / bias 0, PyTorch's default for fc) and the parameter count (21,797,672) match torchvision
// exactly. Training recipe from the paper (section 3.4): SGD, mini-batch 256, lr 0.1, momentum
// 0.9, weight decay 1e-4, cross-entropy.
//
// The stem repeats a few lines of tbd/resnet50.cpp on purpose: each workload file stays
// self-contained, and the two networks use different blocks.
#include "plumb/workloads/fathom/residual.h"

#include <string>
#include <vector>

#include "plumb/core/layer_scope.h"
#include "plumb/workloads/common/classifier_model.h"

namespace plumb::workloads {
namespace {

namespace nn = torch::nn;

nn::Conv2d conv(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t padding) {
  // No bias: every convolution is followed by batch norm, whose shift makes a bias redundant.
  return nn::Conv2d(nn::Conv2dOptions(in, out, kernel).stride(stride).padding(padding).bias(false));
}

// ReLU(inplace=True) as torchvision: saves an allocation and a pass over each feature map.
nn::ReLU inplace_relu() {
  return nn::ReLU(nn::ReLUOptions(/*inplace=*/true));
}

// BasicBlock: 3x3 conv (carries the stride) -> BN -> ReLU -> 3x3 conv -> BN, plus the shortcut
// (a 1x1 projection "downsample.0/1" when the shape changes), then ReLU.
struct BasicBlockImpl : nn::Module {
  BasicBlockImpl(const std::string& path, int64_t in, int64_t planes, int64_t stride)
      : path_(path),
        conv1(register_module("conv1", conv(in, planes, 3, stride, 1))),
        bn1(register_module("bn1", nn::BatchNorm2d(planes))),
        relu(register_module("relu", inplace_relu())),
        conv2(register_module("conv2", conv(planes, planes, 3, 1, 1))),
        bn2(register_module("bn2", nn::BatchNorm2d(planes))) {
    if (stride != 1 || in != planes) {
      // Registered as a Sequential so the parameters are "downsample.0.weight",
      // "downsample.1.weight" ... as torchvision's; the holders share its modules so each
      // runs under its own layer name.
      down_conv = conv(in, planes, 1, stride, 0);
      down_bn = nn::BatchNorm2d(planes);
      register_module("downsample", nn::Sequential(down_conv, down_bn));
    }
  }

  // x: [B, in, H, W] -> [B, planes, H/stride, W/stride]
  torch::Tensor forward(const torch::Tensor& x) {
    LayerScope scope(path_);  // the residual add is attributed to the block
    auto out = run_layer(path_ + ".bn1", bn1, run_layer(path_ + ".conv1", conv1, x));
    out = run_layer(path_ + ".relu", relu, out);
    out = run_layer(path_ + ".bn2", bn2, run_layer(path_ + ".conv2", conv2, out));
    torch::Tensor identity = x;
    if (!down_conv.is_empty()) {
      identity = run_layer(path_ + ".downsample.1", down_bn,
                           run_layer(path_ + ".downsample.0", down_conv, x));
    }
    out += identity;  // in place, as torchvision: one feature map less per block
    return scope.output(run_layer(path_ + ".relu", relu, out));
  }

  std::string path_;
  nn::Conv2d conv1;
  nn::BatchNorm2d bn1;
  nn::ReLU relu;
  nn::Conv2d conv2;
  nn::BatchNorm2d bn2;
  nn::Conv2d down_conv{nullptr};
  nn::BatchNorm2d down_bn{nullptr};
};
TORCH_MODULE(BasicBlock);

struct ResNet34Impl : nn::Module {
  explicit ResNet34Impl(int64_t classes)
      : conv1(register_module("conv1", conv(3, 64, 7, 2, 3))),
        bn1(register_module("bn1", nn::BatchNorm2d(64))),
        relu(register_module("relu", inplace_relu())),
        maxpool(register_module("maxpool",
                                nn::MaxPool2d(nn::MaxPool2dOptions(3).stride(2).padding(1)))) {
    const int64_t blocks[4] = {3, 4, 6, 3};  // paper Table 1, 34-layer
    const int64_t widths[4] = {64, 128, 256, 512};
    int64_t in = 64;
    for (int stage = 0; stage < 4; ++stage) {
      const std::string name = "layer" + std::to_string(stage + 1);
      nn::Sequential seq;
      for (int64_t b = 0; b < blocks[stage]; ++b) {
        const int64_t stride = (stage > 0 && b == 0) ? 2 : 1;
        seq->push_back(BasicBlock(name + "." + std::to_string(b), in, widths[stage], stride));
        in = widths[stage];  // BasicBlock expansion is 1
      }
      stages.push_back(register_module(name, seq));
    }
    avgpool =
        register_module("avgpool", nn::AdaptiveAvgPool2d(nn::AdaptiveAvgPool2dOptions({1, 1})));
    fc = register_module("fc", nn::Linear(in, classes));
    // torchvision: Kaiming-normal (fan_out, relu) convolutions, BN weight 1 / bias 0; fc keeps
    // PyTorch's default initialisation.
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
    out = run_layer("relu", relu, out);
    out = run_layer("maxpool", maxpool, out);  // [B,64,56,56]
    // layer1 [B,64,56,56], layer2 [B,128,28,28], layer3 [B,256,14,14], layer4 [B,512,7,7]
    for (size_t i = 0; i < stages.size(); ++i)
      out = run_layer("layer" + std::to_string(i + 1), stages[i], out);
    out = run_layer("avgpool", avgpool, out);  // [B,512,1,1]
    {
      LayerScope scope("flatten");         // torch.flatten(x, 1) in torchvision's forward: a view
      out = scope.output(out.flatten(1));  // [B,512]
    }
    return run_layer("fc", fc, out);  // [B,classes]
  }

  nn::Conv2d conv1;
  nn::BatchNorm2d bn1;
  nn::ReLU relu;
  nn::MaxPool2d maxpool;
  std::vector<nn::Sequential> stages;
  nn::AdaptiveAvgPool2d avgpool{nullptr};
  nn::Linear fc{nullptr};
};
TORCH_MODULE(ResNet34);

}  // namespace

Workload make_residual() {
  Workload w;
  w.info = {"residual",
            {"fathom"},
            "image classification",
            "ResNet-34 (BasicBlocks 3-4-6-3, 64-512 channels, projection shortcuts) on 224x224 "
            "ImageNet-shaped images, torchvision's layer names and initialisation",
            "He et al., Deep Residual Learning for Image Recognition, CVPR 2016 (34-layer net of "
            "Table 1, option B shortcuts; training recipe: SGD batch 256, lr 0.1, momentum 0.9, "
            "wd 1e-4); layers and init as torchvision.models.resnet34; Fathom's residual workload",
            "images/s",
            4,
            {"batch=2", "image_size=32", "classes=10"}};
  w.default_config = [] {
    Config c = image_classifier_config(256, "mini-batch size (paper: 256)", 32);
    c.add_double("lr", 0.1, "SGD learning rate (paper: 0.1)");
    c.add_double("momentum", 0.9, "SGD momentum (paper: 0.9)");
    c.add_double("weight_decay", 1e-4, "L2 weight decay (paper: 0.0001)");
    return c;
  };
  w.build = [](const Config& c, const torch::Device& device) -> std::unique_ptr<Model> {
    config_dtype(c);
    ResNet34 net(c.get_int("classes"));
    auto make_batch = image_batches(c, device);
    auto optimizer_for = sgd_from_config(c);
    return make_classifier_model(net, device, make_batch, optimizer_for);
  };
  return w;
}

}  // namespace plumb::workloads
