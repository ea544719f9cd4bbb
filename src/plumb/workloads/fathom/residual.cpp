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
#include "plumb/workloads/fathom/residual.h"

#include "plumb/workloads/common/classifier_model.h"
#include "plumb/workloads/common/resnet.h"

namespace plumb::workloads {

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
    return add_sgd_keys(c, 0.1, 0.9, 1e-4, "paper");
  };
  w.build = [](const Config& c, const torch::Device& device) -> std::unique_ptr<Model> {
    ResNet net(resnet34_spec(), c.get_int("classes"));
    return make_sgd_classifier(net, c, device);
  };
  return w;
}

}  // namespace plumb::workloads
