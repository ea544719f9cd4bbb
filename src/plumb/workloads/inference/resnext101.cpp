// ResNeXt-101 (Xie et al., Aggregated Residual Transformations, CVPR 2017), the image
// classifiers of the Facebook data-centre inference study (Park et al. 2018, Table 1):
//   resnext101_32x4d  - cardinality 32, group width 4: 44,177,704 parameters, 7.97 G MACs
//   resnext101_32x48d - cardinality 32, group width 48 (Mahajan et al., Exploring the Limits of
//                       Weakly Supervised Pretraining, ECCV 2018): 828,411,176 parameters,
//                       153.3 G MACs per 224x224 image. Inference only by default, as in the
//                       study; training it is possible but needs ~13 GB for weights, gradients
//                       and momentum alone.
// Both are torchvision's ResNet class with Bottleneck blocks 3-4-23-3, groups 32 and
// width_per_group 4 / 48 (the figures above are torchvision 0.14's, counted with forward hooks).
// Training recipe from the ResNeXt paper (section 5.1): SGD, batch 256, lr 0.1, momentum 0.9,
// weight decay 1e-4.
#include "plumb/workloads/inference/resnext101.h"

#include <string>

#include "plumb/workloads/common/classifier_model.h"
#include "plumb/workloads/common/resnet.h"

namespace plumb::workloads {
namespace {

Workload make_resnext101(const std::string& name, int64_t group_width,
                         const std::string& description, const std::string& source,
                         bool train_by_default) {
  Workload w;
  w.info.name = name;
  w.info.suites = {"inference"};
  w.info.domain = "image classification";
  w.info.description = description;
  w.info.source = source;
  w.info.throughput_unit = "images/s";
  w.info.small_batch = train_by_default ? 2 : 1;
  // The tests' tiny size also narrows the groups: at width 48 even a 32x32 image trains for
  // minutes (829 M parameters).
  w.info.tiny_config = {"batch=2", "image_size=32", "classes=10", "group_width=2"};
  w.info.train_by_default = train_by_default;
  w.default_config = [group_width, name] {
    Config c = image_classifier_config(256, "mini-batch size (ResNeXt paper: 256)", 32);
    c.add_int("group_width", group_width,
              "width d of each of the 32 groups in the 3x3 convolutions (" + name + ": " +
                  std::to_string(group_width) + ")");
    return add_sgd_keys(c, 0.1, 0.9, 1e-4, "ResNeXt paper");
  };
  w.build = [](const Config& c, const torch::Device& device) -> std::unique_ptr<Model> {
    ResNetSpec spec = resnet101_spec();
    spec.groups = 32;
    spec.width_per_group = c.get_int("group_width");
    ResNet net(spec, c.get_int("classes"));
    return make_sgd_classifier(net, c, device);
  };
  return w;
}

}  // namespace

Workload make_resnext101_32x4d() {
  return make_resnext101(
      "resnext101_32x4d", 4,
      "ResNeXt-101 32x4d (bottleneck blocks 3-4-23-3, 32 groups of width 4 in the 3x3 "
      "convolutions) on 224x224 ImageNet-shaped images, torchvision's ResNet class",
      "Xie et al., Aggregated Residual Transformations for Deep Neural Networks, CVPR 2017 "
      "(recipe: SGD batch 256, lr 0.1, momentum 0.9, wd 1e-4); Facebook inference study "
      "(Park et al. 2018) Table 1",
      true);
}

Workload make_resnext101_32x48d() {
  return make_resnext101(
      "resnext101_32x48d", 48,
      "ResNeXt-101 32x48d (bottleneck blocks 3-4-23-3, 32 groups of width 48), 829 M "
      "parameters, on 224x224 images; inference only by default, as in the study",
      "Mahajan et al., Exploring the Limits of Weakly Supervised Pretraining, ECCV 2018 "
      "(the 32x48d model); Facebook inference study (Park et al. 2018) Table 1; recipe of the "
      "ResNeXt paper for the optional training step",
      false);
}

}  // namespace plumb::workloads
