// Faster R-CNN with a ResNet-101 trunk (Ren et al., NeurIPS 2015; He et al. 2016), TBD's
// object-detection model (Zhu et al., IISWC 2018: ResNet-101 as the shared conv stack,
// Pascal VOC 2007, one image per iteration). TBD ran the TensorFlow implementation
// tf-faster-rcnn (Chen & Gupta) and MXNet's example; this follows the TensorFlow one's
// res101 configuration:
//   - trunk: TF-slim ResNet-101 v1 through conv4 ("block3"), output stride 16. Slim puts each
//     stage's stride on the 3x3 conv of the stage's LAST unit (conv2_3, conv3_4), with a
//     strided identity shortcut there; the projection shortcuts are on the first units.
//     Batch norm is frozen (moving statistics, not trained); conv1 and block1 are fixed
//     (FIXED_BLOCKS = 1).
//   - RPN on conv4: 3x3 conv 512 + ReLU, 2 softmax logits and 4 deltas per anchor; anchors
//     scales 8, 16, 32 x base 16 (128, 256, 512 px) x ratios 0.5, 1, 2; 12000 / 2000 boxes
//     before / after NMS 0.7 in training, 6000 / 300 at test; 256 anchors per image (half
//     positive, IoU >= 0.7 or best for a gt; negatives < 0.3; border-crossing anchors
//     ignored); smooth-L1 sigma 3 (beta 1/9).
//   - RoIs: 128 per image, 25% foreground (IoU >= 0.5), background [0, 0.5); targets
//     normalised by stds (0.1, 0.1, 0.2, 0.2) = box-coder weights (10, 10, 5, 5);
//     crop 14x14 (crop_and_resize: one bilinear sample per cell) then 2x2 max pool -> 7x7.
//   - box head: conv5 ("block4", 3 bottleneck units, all stride 1 on the 7x7 crop), spatial
//     mean -> [K, 2048] -> cls_score (21) and bbox_pred (84), smooth-L1 sigma 1.
//   - test: softmax scores, per-class boxes, threshold 0, per-class NMS 0.3, top 100.
//   - SGD lr 0.001, momentum 0.9, weight decay 1e-4 (res101.yml); the reference's doubled
//     bias learning rate is not reproduced.
#include "plumb/workloads/tbd/faster_rcnn.h"

#include <map>
#include <string>

#include <string>

#include "plumb/core/layer_scope.h"
#include "plumb/workloads/common/faster_rcnn.h"
#include "plumb/workloads/common/layers.h"

namespace plumb::workloads {
namespace {

namespace nn = torch::nn;

// TF-slim bottleneck v1: 1x1 -> 3x3 (stride) -> 1x1 (x4), frozen BN after each conv;
// shortcut = 1x1 conv + BN when the depth changes, else the input subsampled by the stride.
struct SlimBottleneckImpl : nn::Module {
  SlimBottleneckImpl(std::string path, int64_t in, int64_t planes, int64_t stride)
      : path_(std::move(path)), stride_(stride) {
    const int64_t out = planes * 4;
    conv1 = register_module(
        "conv1", he_initialised(conv2d(in, planes, 1, 1, same_padding(1), /*bias=*/false)));
    bn1 = register_module("bn1", FrozenNorm(planes));
    conv2 = register_module("conv2", he_initialised(conv2d(planes, planes, 3, stride,
                                                           same_padding(3), /*bias=*/false)));
    bn2 = register_module("bn2", FrozenNorm(planes));
    conv3 = register_module(
        "conv3", he_initialised(conv2d(planes, out, 1, 1, same_padding(1), /*bias=*/false)));
    bn3 = register_module("bn3", FrozenNorm(out, 0.2));
    if (in != out) {
      down_conv = register_module(
          "downsample_conv",
          he_initialised(conv2d(in, out, 1, stride, same_padding(1), /*bias=*/false)));
      down_bn = register_module("downsample_bn", FrozenNorm(out, 0.2));
    }
  }

  // x: [B, in, H, W] -> [B, 4*planes, H/stride, W/stride]
  torch::Tensor forward(const torch::Tensor& x) {
    LayerScope scope(path_);
    auto y = run_layer(path_ + ".bn1", bn1, run_layer(path_ + ".conv1", conv1, x)).relu_();
    y = run_layer(path_ + ".bn2", bn2, run_layer(path_ + ".conv2", conv2, y)).relu_();
    y = run_layer(path_ + ".bn3", bn3, run_layer(path_ + ".conv3", conv3, y));
    torch::Tensor shortcut = x;
    if (!down_conv.is_empty()) {
      shortcut = run_layer(path_ + ".downsample.1", down_bn,
                           run_layer(path_ + ".downsample.0", down_conv, x));
    } else if (stride_ > 1) {
      shortcut = x.slice(2, 0, c10::nullopt, stride_).slice(3, 0, c10::nullopt, stride_);
    }
    return scope.output((y + shortcut).relu_());
  }

  std::string path_;
  int64_t stride_;
  nn::Conv2d conv1{nullptr}, conv2{nullptr}, conv3{nullptr}, down_conv{nullptr};
  FrozenNorm bn1{nullptr}, bn2{nullptr}, bn3{nullptr}, down_bn{nullptr};
};
TORCH_MODULE(SlimBottleneck);

// A slim ResNet stage: `units` bottlenecks, the stride on the last one.
nn::Sequential slim_stage(const std::string& path, int64_t& in, int64_t planes, int64_t units,
                          int64_t stride) {
  nn::Sequential seq;
  for (int64_t u = 0; u < units; ++u) {
    seq->push_back(
        SlimBottleneck(path + "." + std::to_string(u), in, planes, u + 1 == units ? stride : 1));
    in = planes * 4;
  }
  return seq;
}

struct FasterRcnnResNet101Impl : nn::Module {
  FasterRcnnResNet101Impl(const FasterRcnnOptions& options, bool frozen_stem_and_layer1) {
    conv1 = register_module("conv1",
                            he_initialised(conv2d(3, 64, 7, 2, same_padding(7), /*bias=*/false)));
    bn1 = register_module("bn1", FrozenNorm(64));
    int64_t in = 64;
    layer1 = register_module("layer1", slim_stage("backbone.layer1", in, 64, 3, 2));
    layer2 = register_module("layer2", slim_stage("backbone.layer2", in, 128, 4, 2));
    layer3 = register_module("layer3", slim_stage("backbone.layer3", in, 256, 23, 1));
    layer4 = register_module("layer4", slim_stage("roi_heads.box_head.layer4", in, 512, 3, 1));
    heads = register_module("heads", FasterRcnnHeads(options, in));
    if (frozen_stem_and_layer1) {
      conv1->weight.set_requires_grad(false);
      for (auto& p : layer1->parameters()) p.set_requires_grad(false);
    }
  }

  // images [B, 3, H, W] -> conv4 features [B, 1024, H/16, W/16]
  torch::Tensor trunk(const torch::Tensor& x) {
    auto y = run_layer("backbone.bn1", bn1, run_layer("backbone.conv1", conv1, x)).relu_();
    {
      LayerScope scope("backbone.maxpool");  // slim: pad 1, 3x3 max pool stride 2 VALID
      y = scope.output(torch::max_pool2d(y, {3, 3}, {2, 2}, {1, 1}));  // [B, 64, H/4, W/4]
    }
    y = layer1->forward(y);     // [B, 256, H/8, W/8]
    y = layer2->forward(y);     // [B, 512, H/16, W/16]
    return layer3->forward(y);  // [B, 1024, H/16, W/16]
  }

  // pooled RoIs [K, 1024, 7, 7] -> [K, 2048]
  torch::Tensor box_head(const torch::Tensor& pooled) {
    auto y = layer4->forward(pooled);  // [K, 2048, 7, 7]
    LayerScope scope("roi_heads.box_head.avgpool");
    return scope.output(y.mean({2, 3}));
  }

  nn::Conv2d conv1{nullptr};
  FrozenNorm bn1{nullptr};
  nn::Sequential layer1{nullptr}, layer2{nullptr}, layer3{nullptr}, layer4{nullptr};
  FasterRcnnHeads heads{nullptr};
};
TORCH_MODULE(FasterRcnnResNet101);

}  // namespace

Workload make_faster_rcnn() {
  Workload w;
  w.info = {
      "faster_rcnn",
      {"tbd"},
      "object detection",
      "Faster R-CNN with a ResNet-101 C4 trunk (tf-faster-rcnn res101: RPN on conv4 with "
      "9 anchors, 14x14 crops max-pooled to 7x7, conv5 box head), ~600x1000 images, "
      "Pascal VOC's 21 classes",
      "Ren et al., Faster R-CNN, NeurIPS 2015; ResNet-101 trunk and one image per "
      "iteration from TBD (Zhu et al., IISWC 2018); configuration (anchors, proposal "
      "counts, sampling, losses, SGD lr 0.001 momentum 0.9 wd 1e-4) from TBD's TensorFlow "
      "implementation tf-faster-rcnn (res101.yml)",
      "images/s",
      1,
      {"image_height=64", "image_width=64", "classes=5", "rpn_pre_nms_train=300",
       "rpn_post_nms_train=50", "rpn_pre_nms_test=300", "rpn_post_nms_test=20", "rpn_batch=64",
       "roi_batch=8", "anchor_base=1", "pool_size=4", "max_box_side=48", "min_box_side=12"},
      {"image_height=300", "image_width=500", "roi_batch=32", "rpn_post_nms_test=60"}};
  w.default_config = [] {
    FasterRcnnDefaults d;  // tf-faster-rcnn res101: its defaults are the struct's
    d.source = "tf-faster-rcnn res101";
    d.max_box_side = 480;
    Config c = faster_rcnn_config(
        d, {{"batch", "images per iteration (TBD: Faster R-CNN trains on one image per GPU)"},
            {"image_height", "input height (tf-faster-rcnn: shorter side 600)"},
            {"image_width", "input width (tf-faster-rcnn: longer side at most 1000)"},
            {"classes", "classes incl. background (Pascal VOC 2007, TBD's dataset)"},
            {"gt_boxes", "ground-truth objects per image (VOC 2007 averages ~2.4)"},
            {"pool_size", "crop size before the 2x2 max pool (POOLING_SIZE 7 x 2)"}});
    c.add_double("anchor_base", 16,
                 "anchor base size in px; anchors are base x scales 8, 16, 32 (ANCHOR_SCALES)", 1);
    return c;
  };
  w.build = [](const Config& c, const torch::Device& device) -> std::unique_ptr<Model> {
    FasterRcnnOptions o;
    read_faster_rcnn_config(c, o);
    o.in_channels = 1024;
    o.feature_stride = 16;
    o.rpn_channels = 512;
    const double base = c.get_double("anchor_base");
    o.anchor_sizes = {8 * base, 16 * base, 32 * base};
    o.aspect_ratios = {0.5, 1.0, 2.0};
    o.rpn_softmax = true;
    o.rpn_min_size = 1e-3;  // drops boxes clipped to zero width (their targets are inf)
    o.sampling_ratio = 1;   // crop_and_resize: one bilinear sample per output cell
    o.max_pool_after_crop = true;
    o.score_thresh = 0.0;
    o.nms_thresh = 0.3;
    auto net = FasterRcnnResNet101(o, /*frozen_stem_and_layer1=*/true).ptr();
    // Stand-in for the ImageNet BN statistics (see FrozenNorm): one small random image.
    calibrate_frozen_norms(*net, [&net] {
      auto features = net->trunk(torch::randn({1, 3, 128, 128}));  // [1, 1024, 8, 8]
      net->box_head(torch::max_pool2d(features, {2, 2}, {2, 2}));
    });
    return make_faster_rcnn_model(net, c, device);
  };
  return w;
}

}  // namespace plumb::workloads
