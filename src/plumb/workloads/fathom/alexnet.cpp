// alexnet: Fathom's AlexNet image classifier (Krizhevsky, Sutskever & Hinton, ImageNet
// Classification with Deep Convolutional Neural Networks, NIPS 2012) on 224x224 ImageNet-shaped
// images.
//
// Variant: torchvision.models.alexnet, i.e. the single-tower network of Krizhevsky's "One weird
// trick for parallelizing convolutional neural networks" (arXiv 2014): 5 convolutions with
// 64-192-384-256-256 channels, no local response normalisation, no grouped (two-GPU)
// convolutions, an adaptive 6x6 average pool before the classifier, and 3 fully-connected
// layers with dropout 0.5 in front of the first two. It is the AlexNet every framework and
// benchmark since has used; the 2012 two-GPU split was a memory workaround, not architecture.
// Module names ("features.3", "classifier.4" ...), PyTorch's default initialisation and the
// parameter count (61,100,840) match torchvision exactly. Training recipe from the 2012 paper:
// SGD, mini-batch 128, lr 0.01, momentum 0.9, weight decay 5e-4, cross-entropy.
#include "plumb/workloads/fathom/alexnet.h"

#include <string>

#include "plumb/core/layer_scope.h"
#include "plumb/workloads/common/classifier_model.h"
#include "plumb/workloads/common/layers.h"

namespace plumb::workloads {
namespace {

namespace nn = torch::nn;

constexpr double kAlexNetDropout = 0.5;  // paper and torchvision

nn::MaxPool2d pool() {
  return nn::MaxPool2d(nn::MaxPool2dOptions(3).stride(2));
}

struct AlexNetImpl : nn::Module {
  // Index = torchvision's module index; shapes at 224x224 input; W = width (fc_width, 4096).
  AlexNetImpl(int64_t classes, int64_t width)
      : features(register_module(
            "features",
            nn::Sequential(conv2d(3, 64, 11, 4, 2, /*bias=*/true),    // 0 [B,64,55,55]
                           inplace_relu(),                            // 1
                           pool(),                                    // 2 [B,64,27,27]
                           conv2d(64, 192, 5, 1, 2, /*bias=*/true),   // 3 [B,192,27,27]
                           inplace_relu(),                            // 4
                           pool(),                                    // 5 [B,192,13,13]
                           conv2d(192, 384, 3, 1, 1, /*bias=*/true),  // 6 [B,384,13,13]
                           inplace_relu(),                            // 7
                           conv2d(384, 256, 3, 1, 1, /*bias=*/true),  // 8 [B,256,13,13]
                           inplace_relu(),                            // 9
                           conv2d(256, 256, 3, 1, 1, /*bias=*/true),  // 10 [B,256,13,13]
                           inplace_relu(),                            // 11
                           pool()))),                                 // 12 [B,256,6,6]
        // Identity at 224x224; makes any input >= 63x63 reach the classifier as 6x6.
        avgpool(register_module("avgpool",
                                nn::AdaptiveAvgPool2d(nn::AdaptiveAvgPool2dOptions({6, 6})))),
        classifier(register_module("classifier",
                                   nn::Sequential(nn::Dropout(kAlexNetDropout),     // 0
                                                  nn::Linear(256 * 6 * 6, width),   // 1 [B,W]
                                                  inplace_relu(),                   // 2
                                                  nn::Dropout(kAlexNetDropout),     // 3
                                                  nn::Linear(width, width),         // 4 [B,W]
                                                  inplace_relu(),                   // 5
                                                  nn::Linear(width, classes)))) {}  // 6 [B,classes]
  // No custom initialisation: torchvision's AlexNet keeps PyTorch's defaults (Kaiming-uniform
  // with a = sqrt(5)), which the LibTorch modules use as well.

  // x: [B, 3, 224, 224] -> logits [B, classes]
  torch::Tensor forward(const torch::Tensor& x) {
    auto out = run_children("features", features, x);  // [B,256,6,6]
    out = run_layer("avgpool", avgpool, out);          // [B,256,6,6]
    {
      LayerScope scope("flatten");         // torch.flatten(x, 1) in torchvision's forward: a view
      out = scope.output(out.flatten(1));  // [B,9216]
    }
    return run_children("classifier", classifier, out);  // [B,classes]
  }

  nn::Sequential features;
  nn::AdaptiveAvgPool2d avgpool;
  nn::Sequential classifier;
};
TORCH_MODULE(AlexNet);

}  // namespace

Workload make_alexnet() {
  Workload w;
  w.info = {"alexnet",
            {"fathom"},
            "image classification",
            "AlexNet, torchvision's single-tower variant (conv 64-192-384-256-256, no LRN, "
            "FC 4096-4096 with dropout 0.5) on 224x224 ImageNet-shaped images",
            "Krizhevsky et al., ImageNet Classification with Deep CNNs, NIPS 2012 (training "
            "recipe: SGD batch 128, lr 0.01, momentum 0.9, wd 5e-4); layers from Krizhevsky, One "
            "weird trick, arXiv 2014, as in torchvision.models.alexnet; Fathom's alexnet workload",
            "images/s",
            4,
            {"batch=2", "image_size=64", "classes=10", "fc_width=64"}};
  w.default_config = [] {
    Config c = image_classifier_config(128, "mini-batch size (paper: 128)", 63,
                                       "input height and width (ImageNet crop; >= 63 for 3 pools)");
    c.add_int("fc_width", 4096, "units of the two hidden fully-connected layers (paper: 4096)", 1);
    return add_sgd_keys(c, 0.01, 0.9, 5e-4, "paper");
  };
  w.build = [](const Config& c, const torch::Device& device) -> std::unique_ptr<Model> {
    AlexNet net(c.get_int("classes"), c.get_int("fc_width"));
    return make_sgd_classifier(net, c, device);
  };
  return w;
}

}  // namespace plumb::workloads
