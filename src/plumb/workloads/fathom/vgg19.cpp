// vgg19: Fathom's VGG-19 image classifier (Simonyan & Zisserman, Very Deep Convolutional Networks
// for Large-Scale Image Recognition, ICLR 2015 / arXiv 2014), configuration E without batch
// normalisation, on 224x224 ImageNet-shaped images.
//
// Layers as torchvision.models.vgg19: 16 3x3 convolutions (padding 1, bias, in-place ReLU) in
// five stages of 64-128-256-512-512 channels (2-2-4-4-4 convolutions), each closed by a 2x2
// max pool; an adaptive 7x7 average pool (the identity at 224x224; lets inputs down to 32x32
// reach the classifier); FC 25088-4096-4096-classes with dropout 0.5 after the first two, as in
// the paper. Module names ("features.34", "classifier.6" ...), initialisation (Kaiming-normal
// fan-out convolutions, N(0, 0.01) linear weights, zero biases) and the parameter count
// (143,667,240) match torchvision exactly. Fathom's own code registered one of these layers under
// the wrong name; here every name comes from the same table torchvision builds from.
// Training recipe from the paper: SGD, mini-batch 256, lr 0.01, momentum 0.9, weight decay
// 5e-4, cross-entropy.
#include "plumb/workloads/fathom/vgg19.h"

#include <array>
#include <string>

#include "plumb/core/layer_scope.h"
#include "plumb/workloads/common/classifier_model.h"
#include "plumb/workloads/common/layers.h"

namespace plumb::workloads {
namespace {

namespace nn = torch::nn;

constexpr double kVggDropout = 0.5;  // paper and torchvision

// torchvision's cfgs["E"]: output channels of each 3x3 convolution, 0 = 2x2 max pool.
// Feature-map sizes at 224x224: 224 -> 112 -> 56 -> 28 -> 14 -> 7 after each pool.
constexpr int64_t kPool = 0;
constexpr std::array<int64_t, 21> kConfigE = {
    64,  64,  kPool,              // features.0-4:   [B,64,224,224]  -> [B,64,112,112]
    128, 128, kPool,              // features.5-9:   [B,128,112,112] -> [B,128,56,56]
    256, 256, 256,   256, kPool,  // features.10-18: [B,256,56,56]   -> [B,256,28,28]
    512, 512, 512,   512, kPool,  // features.19-27: [B,512,28,28]   -> [B,512,14,14]
    512, 512, 512,   512, kPool,  // features.28-36: [B,512,14,14]   -> [B,512,7,7]
};

// torchvision's make_layers(cfgs["E"], batch_norm=False): conv, relu pairs and pools, indexed
// in one Sequential (features.0 = first conv, features.36 = last pool).
nn::Sequential make_features() {
  nn::Sequential seq;
  int64_t in = 3;
  for (int64_t v : kConfigE) {
    if (v == kPool) {
      seq->push_back(nn::MaxPool2d(nn::MaxPool2dOptions(2).stride(2)));  // [B,C,H/2,W/2]
    } else {
      seq->push_back(nn::Conv2d(nn::Conv2dOptions(in, v, 3).padding(1)));  // [B,v,H,W]
      seq->push_back(inplace_relu());
      in = v;
    }
  }
  return seq;
}

struct Vgg19Impl : nn::Module {
  // W = width (fc_width, 4096).
  Vgg19Impl(int64_t classes, int64_t width)
      : features(register_module("features", make_features())),  // [B,512,7,7] at 224
        avgpool(register_module("avgpool",
                                nn::AdaptiveAvgPool2d(nn::AdaptiveAvgPool2dOptions({7, 7})))),
        classifier(register_module("classifier",
                                   nn::Sequential(nn::Linear(512 * 7 * 7, width),  // 0 [B,W]
                                                  inplace_relu(),                  // 1
                                                  nn::Dropout(kVggDropout),        // 2
                                                  nn::Linear(width, width),        // 3 [B,W]
                                                  inplace_relu(),                  // 4
                                                  nn::Dropout(kVggDropout),        // 5
                                                  nn::Linear(width, classes)))) {  // 6 [B,classes]
    // torchvision's VGG init_weights: Kaiming-normal (fan_out, relu) convolutions, N(0, 0.01)
    // linear weights, zero biases. (The defaults would give the FC layers a different scale.)
    for (auto& m : modules(/*include_self=*/false)) {
      if (auto* c = m->as<nn::Conv2d>()) {
        nn::init::kaiming_normal_(c->weight, 0.0, torch::kFanOut, torch::kReLU);
        nn::init::zeros_(c->bias);
      } else if (auto* fc = m->as<nn::Linear>()) {
        nn::init::normal_(fc->weight, 0.0, 0.01);
        nn::init::zeros_(fc->bias);
      }
    }
  }

  // x: [B, 3, 224, 224] -> logits [B, classes]
  torch::Tensor forward(const torch::Tensor& x) {
    auto out = run_children("features", features, x);  // [B,512,7,7]
    out = run_layer("avgpool", avgpool, out);          // [B,512,7,7]
    {
      LayerScope scope("flatten");         // torch.flatten(x, 1) in torchvision's forward: a view
      out = scope.output(out.flatten(1));  // [B,25088]
    }
    return run_children("classifier", classifier, out);  // [B,classes]
  }

  nn::Sequential features;
  nn::AdaptiveAvgPool2d avgpool;
  nn::Sequential classifier;
};
TORCH_MODULE(Vgg19);

}  // namespace

Workload make_vgg19() {
  Workload w;
  w.info = {"vgg19",
            {"fathom"},
            "image classification",
            "VGG-19 (configuration E, no batch norm: 16 3x3 convs 64-128-256-512-512, FC "
            "4096-4096 with dropout 0.5) on 224x224 ImageNet-shaped images, torchvision's layer "
            "names and initialisation",
            "Simonyan & Zisserman, Very Deep Convolutional Networks, ICLR 2015 (configuration E; "
            "training recipe: SGD batch 256, lr 0.01, momentum 0.9, wd 5e-4); layers and init as "
            "torchvision.models.vgg19; Fathom's vgg workload",
            "images/s",
            4,
            {"batch=2", "image_size=32", "classes=10", "fc_width=64"}};
  w.default_config = [] {
    Config c = image_classifier_config(256, "mini-batch size (paper: 256)", 32,
                                       "input height and width (ImageNet crop; >= 32 for 5 pools)");
    c.add_int("fc_width", 4096, "units of the two hidden fully-connected layers (paper: 4096)", 1);
    return add_sgd_keys(c, 0.01, 0.9, 5e-4, "paper");
  };
  w.build = [](const Config& c, const torch::Device& device) -> std::unique_ptr<Model> {
    Vgg19 net(c.get_int("classes"), c.get_int("fc_width"));
    return make_sgd_classifier(net, c, device);
  };
  return w;
}

}  // namespace plumb::workloads
