// ResNet-50 v1.5 (He et al. 2016, with the stride on the 3x3 convolution as in torchvision),
// the image-classification model of TBD, ParaDnn and the Facebook inference study.
//
// Module names and initialisation follow torchvision.models.resnet50 exactly
// ("layer3.2.conv2", "downsample.0" ...), so parameter names and the count (25,557,032) match
// layer by layer. Training uses torchvision's reference recipe: SGD, lr 0.1, momentum 0.9,
// weight decay 1e-4, cross-entropy over 1000 classes.
#include "plumb/workloads/tbd/resnet50.h"

#include "plumb/workloads/common/classifier_model.h"
#include "plumb/workloads/common/resnet.h"

namespace plumb::workloads {

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
    return add_sgd_keys(c, 0.1, 0.9, 1e-4, "torchvision reference");
  };
  w.build = [](const Config& c, const torch::Device& device) -> std::unique_ptr<Model> {
    ResNet net(resnet50_spec(), c.get_int("classes"));
    return make_sgd_classifier(net, c, device);
  };
  return w;
}

}  // namespace plumb::workloads
