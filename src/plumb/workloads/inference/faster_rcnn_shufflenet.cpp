// Faster-RCNN-Shuffle: the detection model of the Facebook inference study (Park et al., Deep
// Learning Inference in Facebook Data Centers, 2018; Rosetta text detection): Faster R-CNN
// (Ren et al. 2015) with the ResNet trunk replaced by ShuffleNet v1 (Zhang et al., CVPR 2018).
//
// Variant: ShuffleNet 1x with g = 4 groups, the one whose widths the study quotes (RoI
// activations of 544 or 1088 channels = ShuffleNet g=4's stage-3 / stage-4 widths 544 / 1088;
// stage 2 is 272). Detectron-style C4 layout (the study's models ran in Caffe2 / Detectron):
//   - trunk: conv1 3x3/2 (24) + 3x3/2 max pool, stage2 (4 units), stage3 (8 units): 544
//     channels at stride 16. Units: 1x1 group conv (bottleneck = out/4; no grouping on the
//     very first unit, as the paper) + BN + ReLU, channel shuffle, 3x3 depthwise (stride) + BN,
//     1x1 group conv + BN; add the input (stride 1) or concat a 3x3/2 average-pooled input
//     (stride 2); ReLU. Batch norm frozen (AffineChannel); conv1 fixed (Detectron FREEZE_AT).
//   - RPN on stage3: 3x3 conv 544 (Detectron: width = input) + ReLU, sigmoid objectness and
//     deltas for 15 anchors (sizes 32..512 x ratios 0.5, 1, 2), NMS 0.7; 100 proposals at test
//     (the study: 25-100 proposals per image), 2000 in training; 256 anchors / image.
//   - RoIAlign 14x14 (spatial scale 1/16, 1 sample per bin: Detectron's adaptive ratio for
//     RoIs under 224 px) -> stage4 (4 units, first one
//     stride 2) as the box head -> [K, 1088, 7, 7] -> mean -> class and box linear layers.
//   - classes: 2 (text vs background: Rosetta detects text regions).
//   - test: score threshold 0.05, per-class NMS 0.5, 100 detections (Detectron defaults).
//   - training (Detectron defaults; the study only serves this model): 512 RoIs per image,
//     25% foreground, SGD lr 0.01 momentum 0.9 weight decay 1e-4.
// Input ~800x600 (the study: shorter side resized so the longer is 800, "3x800x600").
#include "plumb/workloads/inference/faster_rcnn_shufflenet.h"

#include <map>
#include <string>

#include "plumb/core/errors.h"

#include <string>

#include "plumb/core/layer_scope.h"
#include "plumb/workloads/common/faster_rcnn.h"
#include "plumb/workloads/common/layers.h"

namespace plumb::workloads {
namespace {

namespace nn = torch::nn;

// [B, C, H, W] -> same, channels regrouped (g, C/g) -> (C/g, g) so the next group conv sees
// every group of the previous one.
torch::Tensor shuffle_channels(const torch::Tensor& x, int64_t groups) {
  const int64_t b = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  return x.view({b, groups, c / groups, h, w}).transpose(1, 2).reshape({b, c, h, w});
}

struct ShuffleUnitImpl : nn::Module {
  ShuffleUnitImpl(std::string path, int64_t in, int64_t out, int64_t stride, int64_t groups,
                  bool group_first_conv)
      : path_(std::move(path)), stride_(stride), groups_(groups) {
    const int64_t mid = out / 4;
    const int64_t branch_out = stride > 1 ? out - in : out;  // concat adds the input back
    const int64_t first_groups = group_first_conv ? groups : 1;
    compress = register_module("compress", he_initialised(conv2d(in, mid, 1, 1, same_padding(1),
                                                                 /*bias=*/false, first_groups)));
    bn1 = register_module("bn1", FrozenNorm(mid));
    depthwise = register_module(
        "depthwise",
        he_initialised(conv2d(mid, mid, 3, stride, same_padding(3), /*bias=*/false, mid)));
    bn2 = register_module("bn2", FrozenNorm(mid));
    expand = register_module("expand", he_initialised(conv2d(mid, branch_out, 1, 1, same_padding(1),
                                                             /*bias=*/false, groups)));
    bn3 = register_module("bn3", FrozenNorm(branch_out, 0.2));
    shuffle_groups_ = first_groups;
  }

  // x: [B, in, H, W] -> [B, out, H/stride, W/stride]
  torch::Tensor forward(const torch::Tensor& x) {
    LayerScope scope(path_);
    auto y = run_layer(path_ + ".bn1", bn1, run_layer(path_ + ".compress", compress, x)).relu_();
    if (shuffle_groups_ > 1) {
      LayerScope s(path_ + ".shuffle");
      y = s.output(shuffle_channels(y, shuffle_groups_));
    }
    y = run_layer(path_ + ".bn2", bn2, run_layer(path_ + ".depthwise", depthwise, y));
    y = run_layer(path_ + ".bn3", bn3, run_layer(path_ + ".expand", expand, y));
    if (stride_ == 1) return scope.output((y + x).relu_());
    torch::Tensor shortcut;
    {
      LayerScope s(path_ + ".shortcut");  // 3x3 average pool, stride 2
      shortcut = s.output(torch::avg_pool2d(x, {3, 3}, {2, 2}, {1, 1}));
    }
    return scope.output(torch::cat({shortcut, y}, 1).relu_());
  }

  std::string path_;
  int64_t stride_, groups_, shuffle_groups_ = 1;
  nn::Conv2d compress{nullptr}, depthwise{nullptr}, expand{nullptr};
  FrozenNorm bn1{nullptr}, bn2{nullptr}, bn3{nullptr};
};
TORCH_MODULE(ShuffleUnit);

// A ShuffleNet stage: a stride-2 unit, then `units - 1` stride-1 units.
nn::Sequential shuffle_stage(const std::string& path, int64_t& in, int64_t out, int64_t units,
                             int64_t groups, bool group_first_conv) {
  nn::Sequential seq;
  for (int64_t u = 0; u < units; ++u) {
    seq->push_back(ShuffleUnit(path + "." + std::to_string(u), in, out, u == 0 ? 2 : 1, groups,
                               u > 0 || group_first_conv));
    in = out;
  }
  return seq;
}

struct FasterRcnnShuffleNetImpl : nn::Module {
  FasterRcnnShuffleNetImpl(const FasterRcnnOptions& options, int64_t groups) {
    // ShuffleNet 1x stage widths per group count (Zhang et al., Table 1).
    const int64_t width = groups == 1   ? 144
                          : groups == 2 ? 200
                          : groups == 3 ? 240
                          : groups == 4 ? 272
                                        : 384;
    conv1 = register_module("conv1",
                            he_initialised(conv2d(3, 24, 3, 2, same_padding(3), /*bias=*/false)));
    bn1 = register_module("bn1", FrozenNorm(24));
    int64_t in = 24;
    stage2 = register_module("stage2", shuffle_stage("backbone.stage2", in, width, 4, groups,
                                                     /*group_first_conv=*/false));
    stage3 =
        register_module("stage3", shuffle_stage("backbone.stage3", in, width * 2, 8, groups, true));
    stage4 = register_module(
        "stage4", shuffle_stage("roi_heads.box_head.stage4", in, width * 4, 4, groups, true));
    FasterRcnnOptions o = options;
    o.in_channels = width * 2;
    o.rpn_channels = width * 2;
    heads = register_module("heads", FasterRcnnHeads(o, in));
    conv1->weight.set_requires_grad(false);
  }

  // images [B, 3, H, W] -> stage3 features [B, 2*width, H/16, W/16]
  torch::Tensor trunk(const torch::Tensor& x) {
    auto y = run_layer("backbone.bn1", bn1, run_layer("backbone.conv1", conv1, x)).relu_();
    {
      LayerScope scope("backbone.maxpool");
      y = scope.output(torch::max_pool2d(y, {3, 3}, {2, 2}, {1, 1}));  // [B, 24, H/4, W/4]
    }
    y = stage2->forward(y);     // [B, width, H/8, W/8]
    return stage3->forward(y);  // [B, 2*width, H/16, W/16]
  }

  // pooled RoIs [K, 2*width, 14, 14] -> [K, 4*width]
  torch::Tensor box_head(const torch::Tensor& pooled) {
    auto y = stage4->forward(pooled);  // [K, 4*width, 7, 7]
    LayerScope scope("roi_heads.box_head.avgpool");
    return scope.output(y.mean({2, 3}));
  }

  nn::Conv2d conv1{nullptr};
  FrozenNorm bn1{nullptr};
  nn::Sequential stage2{nullptr}, stage3{nullptr}, stage4{nullptr};
  FasterRcnnHeads heads{nullptr};
};
TORCH_MODULE(FasterRcnnShuffleNet);

}  // namespace

Workload make_faster_rcnn_shufflenet() {
  Workload w;
  w.info = {
      "faster_rcnn_shufflenet",
      {"inference"},
      "object detection",
      "Faster-RCNN-Shuffle: Faster R-CNN (C4 layout) with a ShuffleNet v1 1x g=4 trunk, "
      "RoIAlign 14x14 into stage 4 as the box head, 100 proposals, 800x600 images, 2 "
      "classes (text / background)",
      "Park et al., Deep Learning Inference in Facebook Data Centers, 2018 (model, input "
      "size, 25-100 proposals, 544/1088-channel RoI activations); Zhang et al., "
      "ShuffleNet, CVPR 2018 (trunk); Ren et al., Faster R-CNN, 2015; remaining "
      "settings Detectron's C4 defaults",
      "images/s",
      1,
      {"image_height=128", "image_width=128", "classes=3", "rpn_pre_nms_train=300",
       "rpn_post_nms_train=50", "rpn_pre_nms_test=300", "rpn_post_nms_test=20", "rpn_batch=64",
       "roi_batch=16", "pool_size=4", "anchor_start=8", "max_box_side=96", "min_box_side=24"},
      {},
      /*train_by_default=*/false};
  w.default_config = [] {
    FasterRcnnDefaults d;
    d.source = "Detectron C4";
    d.image_width = 800;
    d.classes = 2;
    d.gt_boxes = 8;
    d.min_box_side = 16;
    d.max_box_side = 200;
    d.post_nms_test = 100;
    d.roi_batch = 512;
    d.lr = 0.01;
    Config c = faster_rcnn_config(
        d, {{"batch", "images per request (the study: 1 image per inference)"},
            {"image_height", "input height (the study: 3x800x600 typical input)"},
            {"image_width", "input width (the study: longer side resized to 800)"},
            {"classes", "classes incl. background (Rosetta: text vs background)"},
            {"gt_boxes", "ground-truth text regions per training image (synthetic)"},
            {"rpn_post_nms_test", "proposals per image at test (the study: 25-100)"},
            {"pool_size", "RoIAlign output size (the study: 14x14 RoI activations)"}});
    c.add_int("groups", 4, "ShuffleNet groups g (544/1088-channel activations in the study)");
    c.add_double("anchor_start", 32,
                 "smallest anchor (Detectron RPN_ANCHOR_START_SIZE); 5 octaves x 3 ratios", 1);
    return c;
  };
  w.build = [](const Config& c, const torch::Device& device) -> std::unique_ptr<Model> {
    const int64_t groups = c.get_int("groups");
    if (groups != 1 && groups != 2 && groups != 3 && groups != 4 && groups != 8)
      throw UsageError("groups must be 1, 2, 3, 4 or 8 (ShuffleNet's configurations), got " +
                       std::to_string(groups));
    FasterRcnnOptions o;
    read_faster_rcnn_config(c, o);
    o.feature_stride = 16;
    const double start = c.get_double("anchor_start");
    o.anchor_sizes = {start, 2 * start, 4 * start, 8 * start, 16 * start};
    o.aspect_ratios = {0.5, 1.0, 2.0};
    o.rpn_softmax = false;
    // Detectron's adaptive ratio, ceil(RoI side / 16 / 14), is 1 for RoIs under 224 px: most.
    o.sampling_ratio = 1;
    o.score_thresh = 0.05;
    o.nms_thresh = 0.5;
    auto net = FasterRcnnShuffleNet(o, groups).ptr();
    calibrate_frozen_norms(*net, [&net] {
      auto features = net->trunk(torch::randn({1, 3, 128, 128}));  // [1, 2*width, 8, 8]
      net->box_head(features);
    });
    return make_faster_rcnn_model(net, c, device);
  };
  return w;
}

}  // namespace plumb::workloads
