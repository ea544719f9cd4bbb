// DenseNet-121 (DenseNet-BC, Huang et al. 2017), one of ParaDnn's real models: a 7x7 stem, four
// dense blocks of 6, 12, 24 and 16 layers (each layer: BN-ReLU-1x1 conv to 4k channels,
// BN-ReLU-3x3 conv to k = 32 new channels, fed the concatenation of every earlier output in the
// block), 1x1-conv + 2x2-average-pool transitions halving the channels between blocks, and a
// linear classifier after global average pooling.
//
// Architecture, module tree and initialisation follow torchvision.models.densenet121 (0.14)
// exactly, with its default memory_efficient=False (no checkpointing: the step keeps every
// concatenation for the backward pass) and drop_rate 0: named_modules() and the parameter
// names ("features.denseblock1.denselayer1.norm1.weight") and count (7,978,856) are the same,
// and every module torchvision calls runs here as a layer of the same name. Training follows
// the paper's ImageNet recipe (Sec. 4.2): SGD with Nesterov momentum 0.9 and no dampening, lr
// 0.1 (divided by 10 at epochs 30 and 60), weight decay 1e-4, batch 256.
#include "plumb/workloads/paradnn_real/densenet121.h"

#include <string>
#include <vector>

#include "plumb/core/layer_scope.h"
#include "plumb/workloads/common/classifier_model.h"
#include "plumb/workloads/common/layers.h"

namespace plumb::workloads {
namespace {

namespace nn = torch::nn;

constexpr int64_t kGrowthRate = 32;  // k: channels each dense layer adds
constexpr int64_t kBottleneck = 4;   // bn_size: the 1x1 conv widens to 4k channels

nn::Conv2d conv_no_bias(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t padding) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, kernel).stride(stride).padding(padding).bias(false));
}

// One dense layer: [B, in, H, W] (as a list of earlier outputs) -> [B, k, H, W].
struct DenseLayerImpl : nn::Module {
  DenseLayerImpl(const std::string& path, int64_t in)
      : path_(path),
        norm1(register_module("norm1", nn::BatchNorm2d(in))),
        relu1(register_module("relu1", inplace_relu())),
        conv1(register_module("conv1", conv_no_bias(in, kBottleneck * kGrowthRate, 1, 1, 0))),
        norm2(register_module("norm2", nn::BatchNorm2d(kBottleneck * kGrowthRate))),
        relu2(register_module("relu2", inplace_relu())),
        conv2(register_module("conv2",
                              conv_no_bias(kBottleneck * kGrowthRate, kGrowthRate, 3, 1, 1))) {}

  // inputs: the block input and every earlier layer's output, [B, c_i, H, W] each.
  torch::Tensor forward(const std::vector<torch::Tensor>& inputs) {
    torch::Tensor x;
    {
      // torchvision's bn_function concatenates afresh in every layer (a copy of all earlier
      // maps: DenseNet's characteristic memory traffic), so it is a layer of its own here.
      LayerScope scope(path_ + ".cat");
      x = scope.output(torch::cat(inputs, 1));  // [B, in, H, W]
    }
    x = run_layer(path_ + ".norm1", norm1, x);
    x = run_layer(path_ + ".relu1", relu1, x);
    x = run_layer(path_ + ".conv1", conv1, x);  // [B, 4k, H, W]
    x = run_layer(path_ + ".norm2", norm2, x);
    x = run_layer(path_ + ".relu2", relu2, x);
    return run_layer(path_ + ".conv2", conv2, x);  // [B, k, H, W]
  }

  std::string path_;
  nn::BatchNorm2d norm1;
  nn::ReLU relu1;
  nn::Conv2d conv1;
  nn::BatchNorm2d norm2;
  nn::ReLU relu2;
  nn::Conv2d conv2;
};
TORCH_MODULE(DenseLayer);

// A dense block of n layers: [B, in, H, W] -> [B, in + n k, H, W].
struct DenseBlockImpl : nn::Module {
  DenseBlockImpl(const std::string& path, int64_t layers, int64_t in) : path_(path) {
    for (int64_t i = 0; i < layers; ++i) {
      const std::string name = "denselayer" + std::to_string(i + 1);
      layers_.push_back(register_module(name, DenseLayer(path + "." + name, in + i * kGrowthRate)));
    }
  }

  torch::Tensor forward(const torch::Tensor& x) {
    std::vector<torch::Tensor> features{x};  // grows by one [B, k, H, W] map per layer
    features.reserve(layers_.size() + 1);
    for (auto& layer : layers_) {
      LayerScope scope(layer->path_);
      features.push_back(scope.output(layer->forward(features)));
    }
    LayerScope scope(path_ + ".cat");
    return scope.output(torch::cat(features, 1));  // [B, in + n k, H, W]
  }

  std::string path_;
  std::vector<DenseLayer> layers_;
};
TORCH_MODULE(DenseBlock);

// Transition: BN-ReLU-1x1 conv (in -> out = in / 2) then 2x2 average pool:
// [B, in, H, W] -> [B, out, H/2, W/2]. A Sequential in torchvision; the names are the same.
struct TransitionImpl : nn::Module {
  TransitionImpl(const std::string& path, int64_t in, int64_t out)
      : path_(path),
        norm(register_module("norm", nn::BatchNorm2d(in))),
        relu(register_module("relu", inplace_relu())),
        conv(register_module("conv", conv_no_bias(in, out, 1, 1, 0))),
        pool(register_module("pool", nn::AvgPool2d(nn::AvgPool2dOptions(2).stride(2)))) {}

  torch::Tensor forward(const torch::Tensor& x) {
    auto out = run_layer(path_ + ".norm", norm, x);
    out = run_layer(path_ + ".relu", relu, out);
    out = run_layer(path_ + ".conv", conv, out);   // [B, out, H, W]
    return run_layer(path_ + ".pool", pool, out);  // [B, out, H/2, W/2]
  }

  std::string path_;
  nn::BatchNorm2d norm;
  nn::ReLU relu;
  nn::Conv2d conv;
  nn::AvgPool2d pool;
};
TORCH_MODULE(Transition);

struct DenseNetImpl : nn::Module {
  // layers per dense block: {6, 12, 24, 16} for DenseNet-121.
  DenseNetImpl(const std::vector<int64_t>& block_layers, int64_t classes) {
    // The typed members are also pushed, in torchvision's order and under its names, into the
    // "features" Sequential ("features.conv0", "features.denseblock1" ...); forward calls
    // them through the typed members.
    nn::Sequential features;
    features->push_back("conv0", conv0);
    features->push_back("norm0", norm0);
    features->push_back("relu0", relu0);
    features->push_back("pool0", pool0);
    int64_t channels = 64;
    for (size_t b = 0; b < block_layers.size(); ++b) {
      // Names are moved in: a const std::string& would pick Sequential's variadic push_back.
      std::string block = "denseblock" + std::to_string(b + 1);
      blocks.push_back(DenseBlock("features." + block, block_layers[b], channels));
      features->push_back(std::move(block), blocks.back());
      channels += block_layers[b] * kGrowthRate;
      if (b + 1 < block_layers.size()) {
        std::string transition = "transition" + std::to_string(b + 1);
        transitions.push_back(Transition("features." + transition, channels, channels / 2));
        features->push_back(std::move(transition), transitions.back());
        channels /= 2;
      }
    }
    norm5 = nn::BatchNorm2d(channels);
    features->push_back("norm5", norm5);
    register_module("features", features);
    classifier = register_module("classifier", nn::Linear(channels, classes));

    // torchvision ("official init from torch repo"): Kaiming-normal convolutions (fan_in, gain
    // sqrt(2)), BN weight 1 / bias 0, linear bias 0 (its weight keeps nn.Linear's default).
    for (auto& m : modules(/*include_self=*/false)) {
      if (auto* c = m->as<nn::Conv2d>()) {
        nn::init::kaiming_normal_(c->weight);
      } else if (auto* bn = m->as<nn::BatchNorm2d>()) {
        nn::init::ones_(bn->weight);
        nn::init::zeros_(bn->bias);
      } else if (auto* fc = m->as<nn::Linear>()) {
        nn::init::zeros_(fc->bias);
      }
    }
  }

  // x: [B, 3, 224, 224] -> logits [B, classes]; shapes below are for 224x224.
  torch::Tensor forward(const torch::Tensor& x) {
    auto out = run_layer("features.conv0", conv0, x);  // [B, 64, 112, 112]
    out = run_layer("features.norm0", norm0, out);
    out = run_layer("features.relu0", relu0, out);
    out = run_layer("features.pool0", pool0, out);  // [B, 64, 56, 56]
    // blocks:      [B, 256, 56, 56] [B, 512, 28, 28] [B, 1024, 14, 14] [B, 1024, 7, 7]
    // transitions: [B, 128, 28, 28] [B, 256, 14, 14] [B, 512, 7, 7]
    for (size_t b = 0; b < blocks.size(); ++b) {
      out = run_layer(blocks[b]->path_, blocks[b], out);
      if (b < transitions.size()) out = run_layer(transitions[b]->path_, transitions[b], out);
    }
    out = run_layer("features.norm5", norm5, out);  // [B, 1024, 7, 7]
    {
      // torchvision's forward: F.relu(inplace=True), adaptive average pool, flatten.
      LayerScope scope("relu");
      out = scope.output(out.relu_());
    }
    {
      LayerScope scope("avgpool");
      out = scope.output(torch::adaptive_avg_pool2d(out, {1, 1}).flatten(1));  // [B, 1024]
    }
    return run_layer("classifier", classifier, out);  // [B, classes]
  }

  nn::Conv2d conv0 = conv_no_bias(3, 64, 7, 2, 3);
  nn::BatchNorm2d norm0{64};
  nn::ReLU relu0 = inplace_relu();
  nn::MaxPool2d pool0{nn::MaxPool2dOptions(3).stride(2).padding(1)};
  std::vector<DenseBlock> blocks;
  std::vector<Transition> transitions;
  nn::BatchNorm2d norm5{nullptr};
  nn::Linear classifier{nullptr};
};
TORCH_MODULE(DenseNet);

}  // namespace

Workload make_densenet121() {
  Workload w;
  w.info = {"densenet121",
            {"paradnn-real"},
            "image classification",
            "DenseNet-121 (DenseNet-BC, growth rate 32, blocks 6-12-24-16, no checkpointing) on "
            "224x224 ImageNet-shaped images, torchvision's layer names and initialisation",
            "Huang et al., Densely Connected Convolutional Networks, CVPR 2017; architecture, "
            "names and initialisation from torchvision 0.14 densenet121; training recipe from the "
            "paper (SGD, Nesterov momentum 0.9, lr 0.1, wd 1e-4, batch 256); one of ParaDnn's "
            "real models",
            "images/s",
            4,
            {"batch=2", "image_size=64", "classes=10"}};
  w.default_config = [] {
    // At 32 the last transition still pools a 2x2 map (below 29 there is nothing left to pool).
    Config c = image_classifier_config(256, "mini-batch size (paper, ImageNet: 256)", 32);
    c.add_double("lr", 0.1, "SGD learning rate (paper; /10 at epochs 30 and 60, not modelled)");
    c.add_double("momentum", 0.9, "Nesterov momentum, no dampening (paper)");
    c.add_double("weight_decay", 1e-4, "L2 weight decay (paper)");
    return c;
  };
  w.build = [](const Config& c, const torch::Device& device) -> std::unique_ptr<Model> {
    DenseNet net(std::vector<int64_t>{6, 12, 24, 16}, c.get_int("classes"));
    return make_sgd_classifier(net, c, device, /*nesterov=*/true);
  };
  return w;
}

}  // namespace plumb::workloads
