// SqueezeNet v1.0 (Iandola et al. 2016), one of ParaDnn's real models: a 7x7 stem convolution,
// eight Fire modules (1x1 "squeeze" convolution feeding parallel 1x1 and 3x3 "expand"
// convolutions whose outputs are concatenated) and a 1x1 convolution to the classes followed
// by global average pooling in place of fully connected layers. No batch norm.
//
// Architecture, module tree and initialisation follow torchvision.models.squeezenet1_0 (0.14)
// exactly: named_modules() and the parameter names ("features.3.squeeze.weight",
// "classifier.1.bias") and count (1,248,424) are the same, and every module torchvision calls
// runs here as a layer of the same name, so per-layer profiles line up with PyTorch's.
// Training follows the authors' Caffe solver (github.com/forresti/SqueezeNet,
// SqueezeNet_v1.0/solver.prototxt and README): SGD, lr 0.04 (then a linear "poly" decay),
// momentum 0.9, weight decay 2e-4 on every parameter, global batch 512 (32 x iter_size 16).
// Input 224x224 as torchvision (the Caffe model trained on 227x227 crops): forward MACs
// 818,924,576, all in convolutions.
#include "plumb/workloads/paradnn_real/squeezenet.h"

#include <string>
#include <vector>

#include "plumb/core/layer_scope.h"
#include "plumb/workloads/common/classifier_model.h"
#include "plumb/workloads/common/layers.h"

namespace plumb::workloads {
namespace {

namespace nn = torch::nn;

// torchvision: MaxPool2d(3, stride 2, ceil_mode=True), the Caffe pooling arithmetic.
nn::MaxPool2d max_pool() {
  return nn::MaxPool2d(nn::MaxPool2dOptions(3).stride(2).ceil_mode(true));
}

// Fire module: squeeze 1x1 (in -> s) + ReLU, then expand 1x1 (s -> e1) and 3x3 (s -> e3), each
// + ReLU, concatenated along channels: [B, in, H, W] -> [B, e1 + e3, H, W]. The convolutions
// have biases (no batch norm follows them).
struct FireImpl : nn::Module {
  FireImpl(const std::string& path, int64_t in, int64_t squeeze_planes, int64_t expand1x1_planes,
           int64_t expand3x3_planes)
      : path_(path),
        squeeze(register_module("squeeze", nn::Conv2d(nn::Conv2dOptions(in, squeeze_planes, 1)))),
        squeeze_activation(register_module("squeeze_activation", inplace_relu())),
        expand1x1(register_module(
            "expand1x1", nn::Conv2d(nn::Conv2dOptions(squeeze_planes, expand1x1_planes, 1)))),
        expand1x1_activation(register_module("expand1x1_activation", inplace_relu())),
        expand3x3(register_module(
            "expand3x3",
            nn::Conv2d(nn::Conv2dOptions(squeeze_planes, expand3x3_planes, 3).padding(1)))),
        expand3x3_activation(register_module("expand3x3_activation", inplace_relu())) {}

  torch::Tensor forward(const torch::Tensor& x) {
    auto s = run_layer(path_ + ".squeeze", squeeze, x);                   // [B, s, H, W]
    s = run_layer(path_ + ".squeeze_activation", squeeze_activation, s);  // in place
    auto e1 = run_layer(path_ + ".expand1x1", expand1x1, s);              // [B, e1, H, W]
    e1 = run_layer(path_ + ".expand1x1_activation", expand1x1_activation, e1);
    auto e3 = run_layer(path_ + ".expand3x3", expand3x3, s);  // [B, e3, H, W]
    e3 = run_layer(path_ + ".expand3x3_activation", expand3x3_activation, e3);
    // The concatenation is a copy of both maps, real traffic: give it a layer of its own.
    LayerScope scope(path_ + ".cat");
    return scope.output(torch::cat({e1, e3}, 1));  // [B, e1 + e3, H, W]
  }

  std::string path_;
  nn::Conv2d squeeze;
  nn::ReLU squeeze_activation;
  nn::Conv2d expand1x1;
  nn::ReLU expand1x1_activation;
  nn::Conv2d expand3x3;
  nn::ReLU expand3x3_activation;
};
TORCH_MODULE(Fire);

struct SqueezeNetImpl : nn::Module {
  explicit SqueezeNetImpl(int64_t classes)
      : conv1(nn::Conv2dOptions(3, 96, 7).stride(2)),
        final_conv(nn::Conv2dOptions(512, classes, 1)) {
    // The typed members are also pushed, in torchvision's order, into the "features" and
    // "classifier" Sequentials, which gives the modules torchvision's index names
    // ("features.0", "classifier.1"); forward calls them through the typed members.
    nn::Sequential features;
    features->push_back(conv1);     // features.0
    features->push_back(relu1);     // features.1
    features->push_back(pools[0]);  // features.2
    const int64_t fire_config[8][4] = {
        // in, squeeze, expand1x1, expand3x3
        {96, 16, 64, 64},    {128, 16, 64, 64},   {128, 32, 128, 128},  // features.3-5
        {256, 32, 128, 128}, {256, 48, 192, 192}, {384, 48, 192, 192},  // features.7-9
        {384, 64, 256, 256}, {512, 64, 256, 256}};                      // features.10, 12
    for (int i = 0; i < 8; ++i) {
      if (i == 3) features->push_back(pools[1]);  // features.6
      if (i == 7) features->push_back(pools[2]);  // features.11
      const auto& f = fire_config[i];
      fires.push_back(Fire("features." + std::to_string(features->size()), f[0], f[1], f[2], f[3]));
      features->push_back(fires.back());
    }
    register_module("features", features);
    nn::Sequential classifier(dropout, final_conv, final_relu, avgpool);  // classifier.0-3
    register_module("classifier", classifier);

    // torchvision: Kaiming-uniform (fan_in, gain sqrt(2)) convolutions except the final one,
    // which is "initialized differently from the rest": N(0, 0.01), the Caffe model's gaussian
    // filler for conv10. All biases zero.
    for (auto& m : modules(/*include_self=*/false)) {
      if (auto* c = m->as<nn::Conv2d>()) {
        if (c == final_conv.get()) {
          nn::init::normal_(c->weight, 0.0, 0.01);
        } else {
          nn::init::kaiming_uniform_(c->weight);
        }
        nn::init::zeros_(c->bias);
      }
    }
  }

  // x: [B, 3, 224, 224] -> logits [B, classes]; shapes below are for 224x224.
  torch::Tensor forward(const torch::Tensor& x) {
    auto out = run_layer("features.0", conv1, x);  // [B, 96, 109, 109]
    out = run_layer("features.1", relu1, out);
    out = run_layer("features.2", pools[0], out);      // [B, 96, 54, 54]
    out = run_fire(0, out);                            // [B, 128, 54, 54]
    out = run_fire(1, out);                            // [B, 128, 54, 54]
    out = run_fire(2, out);                            // [B, 256, 54, 54]
    out = run_layer("features.6", pools[1], out);      // [B, 256, 27, 27]
    out = run_fire(3, out);                            // [B, 256, 27, 27]
    out = run_fire(4, out);                            // [B, 384, 27, 27]
    out = run_fire(5, out);                            // [B, 384, 27, 27]
    out = run_fire(6, out);                            // [B, 512, 27, 27]
    out = run_layer("features.11", pools[2], out);     // [B, 512, 13, 13]
    out = run_fire(7, out);                            // [B, 512, 13, 13]
    out = run_layer("classifier.0", dropout, out);     // identity in eval mode
    out = run_layer("classifier.1", final_conv, out);  // [B, classes, 13, 13]
    out = run_layer("classifier.2", final_relu, out);
    out = run_layer("classifier.3", avgpool, out);  // [B, classes, 1, 1]
    return out.flatten(1);                          // [B, classes] (a view: no work)
  }

  torch::Tensor run_fire(size_t i, const torch::Tensor& x) {
    return run_layer(fires[i]->path_, fires[i], x);
  }

  nn::Conv2d conv1;
  nn::ReLU relu1 = inplace_relu();
  nn::MaxPool2d pools[3] = {max_pool(), max_pool(), max_pool()};
  std::vector<Fire> fires;
  nn::Dropout dropout{nn::DropoutOptions(0.5)};
  nn::Conv2d final_conv;
  nn::ReLU final_relu = inplace_relu();
  nn::AdaptiveAvgPool2d avgpool{nn::AdaptiveAvgPool2dOptions({1, 1})};
};
TORCH_MODULE(SqueezeNet);

}  // namespace

Workload make_squeezenet1_0() {
  Workload w;
  w.info = {"squeezenet1_0",
            {"paradnn-real"},
            "image classification",
            "SqueezeNet v1.0 (7x7/96 stem, 8 Fire modules, 1x1 conv to the classes + global "
            "average pool, no batch norm) on 224x224 ImageNet-shaped images, torchvision's "
            "layer names and initialisation",
            "Iandola et al., SqueezeNet, arXiv:1602.07360, 2016; architecture, names and "
            "initialisation from torchvision 0.14 squeezenet1_0; training recipe from the "
            "authors' Caffe solver (forresti/SqueezeNet v1.0: SGD lr 0.04, momentum 0.9, wd "
            "2e-4, batch 512); one of ParaDnn's real models",
            "images/s",
            4,
            {"batch=2", "image_size=64", "classes=10", "lr=1.0"}};
  w.default_config = [] {
    // At 32 the last max pool still sees a 3x3 map (below 21 the stem leaves too little).
    Config c = image_classifier_config(
        512, "mini-batch size (authors' Caffe solver: 32 x iter_size 16 = 512 per update)", 32,
        "input height and width (torchvision's ImageNet crop)");
    c.add_double("lr", 0.04,
                 "SGD learning rate at the recipe's batch of 512 (Caffe solver base_lr; poly "
                 "decay not modelled), scaled linearly with the batch");
    c.add_double("momentum", 0.9, "SGD momentum (Caffe solver)");
    c.add_double("weight_decay", 2e-4, "L2 weight decay on all parameters (Caffe solver)");
    return c;
  };
  w.build = [](const Config& c, const torch::Device& device) -> std::unique_ptr<Model> {
    SqueezeNet net(c.get_int("classes"));
    auto make_batch = image_batches(c, device);
    // Caffe's update (v = m v + lr g; w -= v) equals PyTorch's (v = m v + g; w -= lr v) at a
    // fixed learning rate, so torch::optim::SGD reproduces it step for step.
    // Without batch norm the recipe's rate diverges at small batches (NaN loss at batch 4):
    // scale it linearly with the batch (Goyal et al. 2017), exact at the recipe's 512.
    auto optimizer_for =
        sgd_from_config(c, /*nesterov=*/false, static_cast<double>(c.get_int("batch")) / 512.0);
    return make_classifier_model(net, device, make_batch, optimizer_for);
  };
  return w;
}

}  // namespace plumb::workloads
