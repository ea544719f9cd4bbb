// retinanet: RetinaNet (Lin et al., Focal Loss for Dense Object Detection, ICCV 2017) as
// ParaDnn ran it: the TensorFlow TPU reference model (tensorflow/tpu models/official/retinanet,
// 2018, TF 1.7-1.12), ResNet-50 FPN on 640x640 COCO images:
//   - trunk: ResNet-50 v1 (stride on the 3x3 conv) giving C3..C5; batch norm in training mode
//     (is_training_bn=True); the stem and stage 1 (conv2d .. conv2d_10 and their batch norms)
//     are not trained (remove_variables, "freeze at conv2" as Detectron);
//   - FPN P3..P7 with 256 channels: 1x1 laterals on C3..C5 (with bias), nearest-neighbour
//     top-down sums, 3x3 "post-hoc" convolutions on P3..P5, P6 = 3x3/2 conv of P5 (the post-hoc
//     output), P7 = 3x3/2 conv of ReLU(P6), then a batch norm per level;
//   - class and box subnets shared across levels: 4 x (3x3 conv 256 with bias, a batch norm of
//     its own per level, ReLU), then a 3x3 conv to K*A logits (bias -log((1-0.01)/0.01)) or
//     4*A box codes; A = 9 anchors (3 octave scales x aspect ratios (1,1), (1.4,0.7),
//     (0.7,1.4)), anchor size 4 x stride, centred at stride/2 + k * stride; K = 90 class ids;
//   - targets (the reference's input pipeline, here in the step): IoU >= 0.5 positive, < 0.5
//     background (no ignore band), every ground truth forced onto its best anchor; box codes
//     (dx, dy, log dw, log dh) without scale factors;
//   - loss: sigmoid focal loss (alpha 0.25, gamma 1.5) + 50 x Huber (delta 0.1) on positive
//     box codes, both normalised by (positives in the batch + 1), box loss also by 4;
//     L2 1e-4 on every trainable variable except the trunk's batch norms;
//   - SGD momentum 0.9, learning rate 0.08 at batch 64 scaled linearly with the batch;
//   - inference: top 5,000 (anchor, class) logits over all levels, decode, per-class NMS at
//     IoU 0.5, best 100 detections.
// Trainable parameters at the defaults: 33,845,070 (derivation in docs/workloads.md).
#include "plumb/workloads/paradnn_real/retinanet.h"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "plumb/core/errors.h"
#include "plumb/core/layer_scope.h"
#include "plumb/workloads/common/detection_ops.h"
#include "plumb/workloads/common/model_builder.h"
#include "plumb/workloads/common/resnet.h"
#include "plumb/workloads/common/synthetic_data.h"

namespace plumb::workloads {
namespace {

namespace nn = torch::nn;
namespace F = torch::nn::functional;

constexpr int kMinLevel = 3;  // P3 (stride 8) .. P7 (stride 128), as the reference
constexpr int kMaxLevel = 7;
constexpr int kLevels = kMaxLevel - kMinLevel + 1;
constexpr int kHeadConvs = 4;
constexpr int64_t kOctaveScales = 3;
// (x, y) multipliers of the reference's aspect_ratios [(1.0, 1.0), (1.4, 0.7), (0.7, 1.4)].
const double kAspects[3][2] = {{1.0, 1.0}, {1.4, 0.7}, {0.7, 1.4}};
constexpr int64_t kAnchors = kOctaveScales * 3;
constexpr double kAnchorScale = 4.0;  // anchor side = 4 x stride at octave 0
// TF batch norm of the reference: momentum 0.997 (torch's 1 - 0.997), epsilon 1e-4.
constexpr double kRetinaNetBnMomentum = 0.003;
constexpr double kBnEpsilon = 1e-4;

std::string level_name(int level) {
  return "p" + std::to_string(level);
}

nn::Conv2d conv3x3(int64_t in, int64_t out, int64_t stride = 1) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, 3).stride(stride).padding(1));
}

nn::BatchNorm2d level_norm(int64_t channels) {
  return nn::BatchNorm2d(
      nn::BatchNorm2dOptions(channels).momentum(kRetinaNetBnMomentum).eps(kBnEpsilon));
}

torch::Tensor run_norm(const std::string& name, nn::BatchNorm2d& norm, const torch::Tensor& x) {
  return run_layer(name, norm, x);
}

// The reference's resnet_fpn above the trunk: C3..C5 -> P3..P7, each [B, F, S/2^l, S/2^l].
struct PyramidImpl : nn::Module {
  PyramidImpl(const std::vector<int64_t>& trunk_channels, int64_t channels) {
    for (int level = kMinLevel; level <= 5; ++level) {
      const std::string l = std::to_string(level);
      laterals.push_back(register_module(
          "l" + l,
          nn::Conv2d(nn::Conv2dOptions(trunk_channels.at(level - kMinLevel), channels, 1))));
      post_hoc.push_back(register_module("post_hoc_d" + l, conv3x3(channels, channels)));
    }
    p6 = register_module("p6", conv3x3(channels, channels, 2));
    p7 = register_module("p7", conv3x3(channels, channels, 2));
    for (int level = kMinLevel; level <= kMaxLevel; ++level)
      norms.push_back(register_module(level_name(level) + "_bn", level_norm(channels)));
    // tf.layers.conv2d defaults: Glorot-uniform kernels, zero biases.
    for (auto& m : modules(/*include_self=*/false)) {
      if (auto* c = m->as<nn::Conv2d>()) {
        nn::init::xavier_uniform_(c->weight);
        nn::init::zeros_(c->bias);
      }
    }
  }

  // c: C3 [B, 512, S/8, S/8], C4 [B, 1024, S/16, S/16], C5 [B, 2048, S/32, S/32]
  std::vector<torch::Tensor> forward(const std::vector<torch::Tensor>& c) {
    std::vector<torch::Tensor> lateral;
    for (int i = 0; i < 3; ++i)
      lateral.push_back(run_layer("fpn.l" + std::to_string(kMinLevel + i), laterals[i], c[i]));
    std::vector<torch::Tensor> p(3);
    p[2] = lateral[2];  // [B, F, S/32, S/32]
    for (int i = 1; i >= 0; --i) {
      LayerScope scope("fpn.top_down" + std::to_string(kMinLevel + i));
      // Nearest-neighbour 2x upsampling of the coarser level plus the lateral: [B, F, S/2^l, ..]
      auto up = F::interpolate(p[i + 1], F::InterpolateFuncOptions()
                                             .scale_factor(std::vector<double>{2.0, 2.0})
                                             .mode(torch::kNearest));
      p[i] = scope.output(up + lateral[i]);
    }
    for (int i = 0; i < 3; ++i)
      p[i] = run_layer("fpn.post_hoc_d" + std::to_string(kMinLevel + i), post_hoc[i], p[i]);
    p.push_back(run_layer("fpn.p6", p6, p[2]));  // [B, F, S/64, S/64]
    {
      LayerScope scope("fpn.p7_relu");
      auto relu = scope.output(torch::relu(p[3]));
      p.push_back(run_layer("fpn.p7", p7, relu));  // [B, F, S/128, S/128]
    }
    for (int i = 0; i < kLevels; ++i)
      p[i] = run_norm("fpn." + level_name(kMinLevel + i) + "_bn", norms[i], p[i]);
    return p;
  }

  std::vector<nn::Conv2d> laterals, post_hoc;
  nn::Conv2d p6{nullptr}, p7{nullptr};
  std::vector<nn::BatchNorm2d> norms;
};
TORCH_MODULE(Pyramid);

// class_net / box_net: convolutions shared by all levels, batch norms per level (the
// reference: "each level has its batch normalization to capture the statistical difference
// among different levels"). Outputs per level [B, H*W*A, outputs_per_anchor], concatenated.
struct SubnetImpl : nn::Module {
  SubnetImpl(std::string path, int64_t channels, int64_t outputs_per_anchor, double predict_bias)
      : path_(std::move(path)), outputs_per_anchor_(outputs_per_anchor) {
    for (int i = 0; i < kHeadConvs; ++i) {
      const std::string n = std::to_string(i);
      convs.push_back(register_module("conv" + n, conv3x3(channels, channels)));
      for (int level = kMinLevel; level <= kMaxLevel; ++level)
        norms.push_back(register_module("bn" + n + "_" + level_name(level), level_norm(channels)));
    }
    predict = register_module("predict", conv3x3(channels, outputs_per_anchor * kAnchors));
    // Reference initialisation: N(0, 0.01) kernels, zero biases; the class logits start at
    // the prior probability 0.01.
    for (auto& m : modules(/*include_self=*/false)) {
      if (auto* c = m->as<nn::Conv2d>()) {
        nn::init::normal_(c->weight, 0.0, 0.01);
        nn::init::zeros_(c->bias);
      }
    }
    nn::init::constant_(predict->bias, predict_bias);
  }

  // features: P3..P7, each [B, F, H_l, W_l] -> [B, sum_l H_l*W_l*A, outputs_per_anchor]
  torch::Tensor forward(const std::vector<torch::Tensor>& features) {
    std::vector<torch::Tensor> outs;
    for (int l = 0; l < kLevels; ++l) {
      const std::string level = level_name(kMinLevel + l);
      auto x = features[l];
      for (int i = 0; i < kHeadConvs; ++i) {
        const std::string n = std::to_string(i);
        x = run_layer(path_ + ".conv" + n, convs[i], x);  // [B, F, H_l, W_l]
        x = run_norm(path_ + ".bn" + n + "_" + level, norms[i * kLevels + l], x);
        x.relu_();
      }
      auto y = run_layer(path_ + ".predict", predict, x);  // [B, A*O, H_l, W_l]
      LayerScope scope(path_ + ".flatten");
      // Location-major, anchor-minor: the order of the anchors.
      outs.push_back(
          scope.output(y.permute({0, 2, 3, 1}).reshape({y.size(0), -1, outputs_per_anchor_})));
    }
    LayerScope scope(path_ + ".concat");
    return scope.output(torch::cat(outs, 1));  // [B, N, O]
  }

  std::string path_;
  int64_t outputs_per_anchor_;
  std::vector<nn::Conv2d> convs;
  std::vector<nn::BatchNorm2d> norms;  // [conv][level]
  nn::Conv2d predict{nullptr};
};
TORCH_MODULE(Subnet);

struct RetinaNetImpl : nn::Module {
  RetinaNetImpl(int64_t classes, int64_t channels)
      : backbone(register_module("backbone", ResNet(resnet50_spec(), 0))),
        fpn(register_module("fpn", Pyramid(std::vector<int64_t>{backbone->stage_channels(2),
                                                                backbone->stage_channels(3),
                                                                backbone->stage_channels(4)},
                                           channels))),
        class_net(register_module(
            "class_net", Subnet("class_net", channels, classes, -std::log((1 - 0.01) / 0.01)))),
        box_net(register_module("box_net", Subnet("box_net", channels, 4, 0.0))) {
    backbone->freeze_below(2);  // the reference trains from stage 2 (conv3_x) on
  }

  // images [B, 3, S, S] -> class logits [B, N, K], box codes [B, N, 4]
  std::pair<torch::Tensor, torch::Tensor> forward(const torch::Tensor& images) {
    auto c = backbone->features(images, 2);  // C3..C5
    auto p = fpn->forward(c);                // P3..P7
    return {class_net->forward(p), box_net->forward(p)};
  }

  ResNet backbone;
  Pyramid fpn;
  Subnet class_net, box_net;
};
TORCH_MODULE(RetinaNet);

// The reference's Anchors: for each level, stride 2^l, centres stride/2 + k * stride, and per
// location 3 octave scales x 3 aspect pairs (octave-major), side 4 * stride * 2^(o/3) times the
// (x, y) aspect multipliers. Location-major, anchor-minor: [sum_l (S/2^l)^2 * A, 4] (x1, y1,
// x2, y2). A constant of the input size, computed once as the reference's input pipeline does.
torch::Tensor retinanet_anchors(int64_t image_size, const torch::Device& device) {
  std::vector<torch::Tensor> levels;
  for (int level = kMinLevel; level <= kMaxLevel; ++level) {
    const double stride = std::pow(2.0, level);
    std::vector<double> half;  // per anchor: half width, half height
    for (int64_t o = 0; o < kOctaveScales; ++o) {
      const double base = kAnchorScale * stride * std::pow(2.0, static_cast<double>(o) / 3.0);
      for (const auto& a : kAspects) {
        half.push_back(base * a[0] / 2.0);
        half.push_back(base * a[1] / 2.0);
      }
    }
    auto opts = torch::TensorOptions().dtype(torch::kDouble);
    auto centres = torch::arange(stride / 2.0, static_cast<double>(image_size), stride, opts);
    auto grid = torch::meshgrid({centres, centres}, "ij");                  // y, x: [H, W] each
    auto xy = torch::stack({grid[1], grid[0]}, -1).reshape({-1, 1, 2});     // [H*W, 1, 2]
    auto hw = torch::tensor(half, opts).reshape({1, kAnchors, 2});          // [1, A, 2]
    levels.push_back(torch::cat({xy - hw, xy + hw}, -1).reshape({-1, 4}));  // [H*W*A, 4]
  }
  return torch::cat(levels, 0).to(device, torch::kFloat);
}

class RetinaNetModel : public Model {
 public:
  RetinaNetModel(const Config& c, const torch::Device& device)
      : net_(c.get_int("classes"), c.get_int("fpn_channels")),
        device_(device),
        batch_(c.get_int("batch")),
        image_size_(c.get_int("image_size")),
        classes_(c.get_int("classes")),
        max_instances_(c.get_int("max_instances")),
        max_objects_(std::min(c.get_int("max_objects"), c.get_int("max_instances"))),
        match_threshold_(c.get_double("match_threshold")),
        alpha_(c.get_double("alpha")),
        gamma_(c.get_double("gamma")),
        delta_(c.get_double("delta")),
        box_loss_weight_(c.get_double("box_loss_weight")),
        pre_nms_top_k_(c.get_int("pre_nms_top_k")),
        nms_threshold_(c.get_double("nms_threshold")),
        detections_(c.get_int("detections")) {
    if (image_size_ % (int64_t{1} << kMaxLevel) != 0)
      throw UsageError("retinanet: image_size must be a multiple of 128 (the P7 stride), got " +
                       std::to_string(image_size_));
    net_->to(device);
    anchors_ = retinanet_anchors(image_size_, device);
    // The reference's L2 term skips only the trunk's batch-norm variables (named
    // "batch_normalization*"); the pyramid and subnet norms are named "p3-bn", "class-0-bn-3"
    // and so are decayed. Frozen variables are not handed to the optimizer at all.
    std::vector<torch::Tensor> decayed, undecayed;
    for (const auto& item : net_->named_parameters()) {
      if (!item.value().requires_grad()) continue;
      const auto& key = item.key();
      const bool trunk_norm =
          key.rfind("backbone.", 0) == 0 &&
          (key.find(".bn") != std::string::npos || key.find("downsample.1") != std::string::npos);
      (trunk_norm ? undecayed : decayed).push_back(item.value());
    }
    // Linear scaling rule of the reference: 0.08 at batch 64.
    const double lr = c.get_double("lr") * static_cast<double>(batch_) / 64.0;
    auto options = torch::optim::SGDOptions(lr).momentum(c.get_double("momentum"));
    std::vector<torch::optim::OptimizerParamGroup> groups;
    groups.emplace_back(
        decayed, std::make_unique<torch::optim::SGDOptions>(
                     torch::optim::SGDOptions(options).weight_decay(c.get_double("weight_decay"))));
    groups.emplace_back(undecayed, std::make_unique<torch::optim::SGDOptions>(
                                       torch::optim::SGDOptions(options).weight_decay(0.0)));
    optimizer_ = std::make_unique<torch::optim::SGD>(std::move(groups), options);
  }

  nn::Module& module() override { return *net_; }

  // tensors: images [B, 3, S, S] (normalised), ground-truth boxes [B, M, 4] (x1, y1, x2, y2 in
  // pixels), classes [B, M] int64 in [0, K); rows past an image's object count are -1 (the
  // reference pads to max_instances = 100 the same way).
  Batch make_batch() override {
    auto images = normalized_images(batch_, 3, image_size_, image_size_, device_);
    auto boxes = torch::full({batch_, max_instances_, 4}, -1.0);
    auto classes = torch::full({batch_, max_instances_}, int64_t{-1}, torch::kLong);
    const double size = static_cast<double>(image_size_);
    for (int64_t b = 0; b < batch_; ++b) {
      const int64_t n = torch::randint(1, max_objects_ + 1, {1}).item<int64_t>();
      // Box side log-uniform from 2% to 80% of the image (COCO: ~41% small objects below
      // 32x32 pixels at this scale, ~24% large above 96x96), aspect log-uniform in [1/2, 2].
      auto side =
          torch::exp(torch::empty({n}, torch::kDouble).uniform_(std::log(0.02), std::log(0.8))) *
          size;
      auto aspect =
          torch::exp(torch::empty({n}, torch::kDouble).uniform_(std::log(0.5), std::log(2.0)));
      auto w = (side * aspect.sqrt()).clamp_max(size);
      auto h = (side / aspect.sqrt()).clamp_max(size);
      auto x1 = torch::rand({n}, torch::kDouble) * (size - w);
      auto y1 = torch::rand({n}, torch::kDouble) * (size - h);
      boxes[b].narrow(0, 0, n).copy_(torch::stack({x1, y1, x1 + w, y1 + h}, 1));
      classes[b].narrow(0, 0, n).copy_(torch::randint(0, classes_, {n}, torch::kLong));
    }
    return {{images, boxes.to(device_), classes.to(device_)}, static_cast<double>(batch_)};
  }

  double train_step(const Batch& b) override {
    {
      LayerScope scope("optimizer");
      optimizer_->zero_grad();
    }
    auto [logits, codes] = net_->forward(b.tensors[0]);  // [B, N, K], [B, N, 4]
    torch::Tensor loss;
    {
      auto [cls_targets, box_targets] = label_anchors(b.tensors[1], b.tensors[2]);
      LayerScope scope("loss");
      // Positives (cls target >= 0) over the batch, plus one so an empty batch stays finite.
      auto positive = cls_targets.ge(0);                         // [B, N]
      auto normalizer = positive.sum().to(torch::kFloat) + 1.0;  // []
      // Sigmoid focal loss over one-hot targets (background rows all zero).
      auto onehot = torch::zeros_like(logits);
      onehot.scatter_(2, cls_targets.clamp_min(0).unsqueeze(2),
                      positive.unsqueeze(2).to(logits.dtype()));  // [B, N, K]
      auto ce = F::binary_cross_entropy_with_logits(
          logits, onehot, F::BinaryCrossEntropyWithLogitsFuncOptions().reduction(torch::kNone));
      auto probs = torch::sigmoid(logits);
      auto is_positive = onehot.eq(1.0);
      auto p_t = torch::where(is_positive, probs, 1.0 - probs);
      auto focal = torch::pow(1.0 - p_t, gamma_) * ce;
      auto weighted = torch::where(is_positive, alpha_ * focal, (1.0 - alpha_) * focal);
      auto cls_loss = weighted.sum() / normalizer;
      // Huber on the non-zero box codes (the reference's mask), summed, / (4 * normalizer).
      // Huber(delta) = delta * smooth-L1(beta = delta); masked codes give zero differences.
      auto mask = box_targets.ne(0.0).to(codes.dtype());
      auto box_loss =
          delta_ * det::smooth_l1_sum(codes * mask, box_targets, delta_) / (4.0 * normalizer);
      loss = scope.output(cls_loss + box_loss_weight_ * box_loss);
    }
    loss.backward();
    {
      LayerScope scope("optimizer");
      optimizer_->step();
    }
    return loss.item<double>();
  }

  double infer_step(const Batch& b) override {
    auto [logits, codes] = net_->forward(b.tensors[0]);  // [B, N, K], [B, N, 4]
    auto checksum = torch::zeros({}, logits.options());
    for (int64_t i = 0; i < logits.size(0); ++i) {
      torch::Tensor boxes, scores, classes;
      {
        LayerScope scope("postprocess.top_k");
        // Top (anchor, class) pairs over all levels by logit (the reference's
        // MAX_DETECTION_POINTS), then their anchors and classes.
        auto flat = logits[i].reshape({-1});  // [N*K]
        auto top = flat.topk(std::min<int64_t>(pre_nms_top_k_, flat.size(0)));
        auto index = std::get<1>(top);
        auto anchor = index.div(classes_, "floor");
        classes = index.remainder(classes_);
        scores = scope.output(torch::sigmoid(std::get<0>(top)));  // [T]
        boxes = coder_.decode(codes[i].index_select(0, anchor), anchors_.index_select(0, anchor),
                              "postprocess.decode");  // [T, 4]
      }
      // Per-class NMS; batched_nms returns keeps in decreasing score, so the first
      // `detections` are the reference's best 100 after its per-class NMS.
      auto keep =
          det::batched_nms(boxes, scores, classes, nms_threshold_, detections_, "postprocess.nms");
      LayerScope scope("postprocess.gather");
      checksum =
          checksum + scores.index_select(0, keep).sum() + boxes.index_select(0, keep).sum() * 1e-6;
    }
    return checksum.item<double>();
  }

 private:
  // The reference's AnchorLabeler per image: class target [N] (class id, or -1 background) and
  // box codes [N, 4] (zero for background). ArgMaxMatcher(0.5, 0.5, force_match_for_each_row)
  // is torchvision's Matcher with equal thresholds and low-quality matches kept.
  std::pair<torch::Tensor, torch::Tensor> label_anchors(const torch::Tensor& gt_boxes,
                                                        const torch::Tensor& gt_classes) {
    LayerScope scope("anchor_labeler");
    det::Matcher matcher;
    matcher.high = match_threshold_;
    matcher.low = match_threshold_;
    matcher.allow_low_quality_matches = true;
    std::vector<torch::Tensor> cls_targets, box_targets;
    for (int64_t i = 0; i < gt_boxes.size(0); ++i) {
      auto valid = gt_classes[i].ge(0).nonzero().squeeze(1);
      auto boxes = gt_boxes[i].index_select(0, valid);                 // [G, 4]
      auto classes = gt_classes[i].index_select(0, valid);             // [G]
      auto iou = det::box_iou(boxes, anchors_, "anchor_labeler.iou");  // [G, N]
      auto matches = matcher(iou, "anchor_labeler.matcher");           // [N]
      auto positive = matches.ge(0);                                   // [N]
      auto index = matches.clamp_min(0);
      cls_targets.push_back(
          torch::where(positive, classes.index_select(0, index), torch::full_like(index, -1)));
      auto codes = coder_.encode(boxes.index_select(0, index), anchors_, "anchor_labeler.encode");
      box_targets.push_back(codes * positive.unsqueeze(1).to(codes.dtype()));  // [N, 4]
    }
    return {torch::stack(cls_targets), torch::stack(box_targets)};
  }

  RetinaNet net_;
  torch::Device device_;
  int64_t batch_, image_size_, classes_, max_instances_, max_objects_;
  double match_threshold_, alpha_, gamma_, delta_, box_loss_weight_;
  int64_t pre_nms_top_k_;
  double nms_threshold_;
  int64_t detections_;
  torch::Tensor anchors_;  // [N, 4]
  det::BoxCoder coder_;    // weights (1, 1, 1, 1): the reference's coder has no scale factors
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
};

}  // namespace

Workload make_retinanet() {
  Workload w;
  w.info = {"retinanet",
            {"paradnn-real"},
            "object detection",
            "RetinaNet, ResNet-50 FPN P3-P7 (256 ch, batch-normed), 9 anchors, 4x256 class/box "
            "subnets with per-level batch norm, focal loss + Huber, 640x640 COCO-shaped images, "
            "90 classes (TPU reference configuration)",
            "Lin et al., Focal Loss for Dense Object Detection, ICCV 2017; configuration of the "
            "TensorFlow TPU reference (tensorflow/tpu models/official/retinanet, 2018) that "
            "ParaDnn (Wang et al., MLSys 2020) ran: architecture, anchors, labeler, loss, SGD",
            "images/s",
            1,
            {"batch=2", "image_size=128", "classes=4", "fpn_channels=16", "max_instances=8",
             "max_objects=4", "pre_nms_top_k=500"},
            // One 640x640 training step takes ~7 s on one core; 384x384 (a multiple of the
            // 128-pixel P7 stride) takes ~3 s.
            {"image_size=384"},
            true};
  w.default_config = [] {
    Config c;
    c.add_int("batch", 64, "mini-batch size (TPU reference: train_batch_size 64)");
    c.add_int("image_size", 640, "input height and width (TPU reference: 640, a multiple of 128)",
              128);
    c.add_int("classes", 90, "class logits per anchor (TPU reference: num_classes 90, COCO ids)");
    c.add_int("fpn_channels", 256, "channels of P3..P7 and the subnets (paper: 256)");
    c.add_int("max_instances", 100,
              "ground-truth rows per image, padded with -1 (TPU reference: max_num_instances)");
    c.add_int("max_objects", 14,
              "objects per synthetic image uniform in [1, this] (COCO averages 7.3 per image)");
    c.add_double("match_threshold", 0.5,
                 "IoU for a positive anchor; below it is background (TPU reference: 0.5, no "
                 "ignore band)");
    c.add_double("alpha", 0.25, "focal loss alpha (TPU reference / paper: 0.25)");
    c.add_double("gamma", 1.5, "focal loss gamma (TPU reference: 1.5; paper: 2)");
    c.add_double("delta", 0.1, "Huber loss delta on box codes (TPU reference: 0.1)");
    c.add_double("box_loss_weight", 50.0, "weight of the box loss (TPU reference: 50)");
    c.add_double("lr", 0.08,
                 "SGD learning rate at batch 64, scaled linearly with the batch "
                 "(TPU reference: 0.08)");
    c.add_double("momentum", 0.9, "SGD momentum (TPU reference: 0.9)");
    c.add_double("weight_decay", 1e-4, "L2 weight decay, not on trunk batch norms (TPU reference)");
    c.add_int("pre_nms_top_k", 5000,
              "(anchor, class) pairs kept before NMS (TPU reference: MAX_DETECTION_POINTS)");
    c.add_double("nms_threshold", 0.5, "per-class NMS IoU threshold (TPU reference: 0.5)");
    c.add_int("detections", 100, "detections per image (TPU reference: 100)");
    return c;
  };
  w.build = build_model<RetinaNetModel>;
  return w;
}

}  // namespace plumb::workloads
