// Faster R-CNN region proposal network and RoI heads (see faster_rcnn.h).
#include "plumb/workloads/common/faster_rcnn.h"

#include <algorithm>

#include "plumb/core/layer_scope.h"

namespace plumb::workloads {

namespace nn = torch::nn;

FrozenNormImpl::FrozenNormImpl(int64_t channels, double gain_)
    : gain(gain_),
      scale_(register_buffer("scale", torch::ones({channels}))),
      shift_(register_buffer("shift", torch::zeros({channels}))) {}

torch::Tensor FrozenNormImpl::forward(const torch::Tensor& x) {
  if (calibrating) {
    torch::NoGradGuard no_grad;
    auto [var, mean] = torch::var_mean(x, {0, 2, 3}, /*unbiased=*/false);  // [C]
    // One scale per layer (the mean channel variance): per-channel scales would blow up the
    // near-dead channels of a random network and make the first SGD steps diverge.
    scale_.fill_(gain * (var.mean() + 1e-5).rsqrt().item<double>());
    shift_.copy_(-mean * scale_);
  }
  return x * scale_.reshape({1, -1, 1, 1}) + shift_.reshape({1, -1, 1, 1});
}

void calibrate_frozen_norms(nn::Module& root, const std::function<void()>& forward) {
  auto set = [&root](bool on) {
    for (auto& m : root.modules())
      if (auto* f = m->as<FrozenNormImpl>()) f->calibrating = on;
  };
  set(true);
  {
    torch::NoGradGuard no_grad;
    forward();
  }
  set(false);
}

FasterRcnnHeadsImpl::FasterRcnnHeadsImpl(const FasterRcnnOptions& options, int64_t head_dim)
    : options_(options),
      cell_anchors_(det::cell_anchors(options.anchor_sizes, options.aspect_ratios)),
      rpn_coder_{{1.0, 1.0, 1.0, 1.0}},
      roi_coder_{options.roi_box_coder_weights} {
  const int64_t anchors = static_cast<int64_t>(cell_anchors_.size(0));
  const int64_t logits = options.rpn_softmax ? 2 : 1;
  rpn_conv = register_module(
      "rpn_conv",
      nn::Conv2d(nn::Conv2dOptions(options.in_channels, options.rpn_channels, 3).padding(1)));
  rpn_cls = register_module(
      "rpn_cls_logits", nn::Conv2d(nn::Conv2dOptions(options.rpn_channels, anchors * logits, 1)));
  rpn_bbox = register_module("rpn_bbox_pred",
                             nn::Conv2d(nn::Conv2dOptions(options.rpn_channels, anchors * 4, 1)));
  cls_score = register_module("cls_score", nn::Linear(head_dim, options.classes));
  bbox_pred = register_module("bbox_pred", nn::Linear(head_dim, options.classes * 4));
  // Initialisation of the reference implementations: N(0, 0.01) for the RPN and the class
  // scores, N(0, 0.001) for the box regressor, zero biases.
  for (auto* conv : {&rpn_conv, &rpn_cls, &rpn_bbox}) {
    nn::init::normal_((*conv)->weight, 0.0, 0.01);
    nn::init::zeros_((*conv)->bias);
  }
  nn::init::normal_(cls_score->weight, 0.0, 0.01);
  nn::init::zeros_(cls_score->bias);
  nn::init::normal_(bbox_pred->weight, 0.0, 0.001);
  nn::init::zeros_(bbox_pred->bias);
}

FasterRcnnHeadsImpl::RpnOutput FasterRcnnHeadsImpl::rpn_head(const torch::Tensor& features,
                                                             int64_t image_h, int64_t image_w) {
  const int64_t b = features.size(0), h = features.size(2), w = features.size(3);
  auto t = run_layer("rpn.head.conv", rpn_conv, features).relu();  // [B, rpn_channels, h, w]
  auto logits = run_layer("rpn.head.cls_logits", rpn_cls, t);      // [B, A*L, h, w]
  auto deltas = run_layer("rpn.head.bbox_pred", rpn_bbox, t);      // [B, A*4, h, w]
  RpnOutput out;
  const int64_t a = cell_anchors_.size(0);
  // Channel order (anchor, value) -> [B, h*w*A, value], the order grid_anchors produces.
  out.objectness =
      logits.view({b, a, -1, h, w}).permute({0, 3, 4, 1, 2}).reshape({b, h * w * a, -1});
  out.deltas = deltas.view({b, a, 4, h, w}).permute({0, 3, 4, 1, 2}).reshape({b, h * w * a, 4});
  // Strides as torchvision: image size // feature size.
  out.anchors = det::grid_anchors(cell_anchors_.to(features.device()), h, w, image_h / h,
                                  image_w / w, "rpn.anchor_generator");  // [h*w*A, 4]
  return out;
}

std::vector<torch::Tensor> FasterRcnnHeadsImpl::proposals(const RpnOutput& rpn, int64_t image_h,
                                                          int64_t image_w, bool training) {
  const int64_t pre = training ? options_.pre_nms_train : options_.pre_nms_test;
  const int64_t post = training ? options_.post_nms_train : options_.post_nms_test;
  std::vector<torch::Tensor> result;
  torch::NoGradGuard no_grad;  // proposals are inputs to the second stage, not trained through
  for (int64_t i = 0; i < rpn.objectness.size(0); ++i) {
    LayerScope scope("rpn.filter_proposals");
    auto logits = rpn.objectness[i];  // [N, L]
    auto scores = options_.rpn_softmax ? logits.softmax(1).select(1, 1)
                                       : logits.select(1, 0).sigmoid();           // [N]
    auto top = std::get<1>(scores.topk(std::min<int64_t>(pre, scores.size(0))));  // [n]
    auto boxes = rpn_coder_.decode(rpn.deltas[i].index_select(0, top),
                                   rpn.anchors.index_select(0, top), "rpn.box_coder");  // [n, 4]
    boxes = det::clip_boxes(boxes, image_h, image_w, "rpn.clip_boxes");
    auto top_scores = scores.index_select(0, top);
    auto keep = det::remove_small_boxes(boxes, options_.rpn_min_size, "rpn.remove_small_boxes");
    boxes = boxes.index_select(0, keep);
    top_scores = top_scores.index_select(0, keep);
    keep = det::nms(boxes, top_scores, options_.rpn_nms, post, "rpn.nms");
    result.push_back(scope.output(boxes.index_select(0, keep)));  // [<= post, 4]
  }
  return result;
}

torch::Tensor FasterRcnnHeadsImpl::rpn_loss(const RpnOutput& rpn, int64_t image_h, int64_t image_w,
                                            const torch::Tensor& gt_boxes) {
  const int64_t b = rpn.objectness.size(0);
  std::vector<torch::Tensor> logits, labels, box_pred, box_target;
  int64_t sampled_total = 0;
  for (int64_t i = 0; i < b; ++i) {
    torch::Tensor lab, pos, neg, targets;
    {
      LayerScope scope("rpn.assign_targets");
      torch::NoGradGuard no_grad;
      auto iou = det::box_iou(gt_boxes[i], rpn.anchors, "rpn.box_iou");  // [G, N]
      det::Matcher matcher{options_.rpn_fg_iou, options_.rpn_bg_iou, true};
      auto matches = matcher(iou, "rpn.matcher");  // [N]
      lab = (matches >= 0).to(torch::kLong);
      lab.masked_fill_(matches == det::Matcher::kBetween, -1);
      if (options_.rpn_drop_cross_boundary) {
        const auto& a = rpn.anchors;
        auto inside = (a.select(1, 0) >= 0)
                          .logical_and(a.select(1, 1) >= 0)
                          .logical_and(a.select(1, 2) <= image_w)
                          .logical_and(a.select(1, 3) <= image_h);
        lab.masked_fill_(inside.logical_not(), -1);
      }
      std::tie(pos, neg) = det::sample_balanced(lab, options_.rpn_batch,
                                                options_.rpn_positive_fraction, "rpn.sampler");
      auto matched_gt = gt_boxes[i].index_select(0, matches.index_select(0, pos).clamp_min(0));
      targets = rpn_coder_.encode(matched_gt, rpn.anchors.index_select(0, pos), "rpn.box_coder");
    }
    auto sampled = torch::cat({pos, neg});
    sampled_total += sampled.numel();
    logits.push_back(rpn.objectness[i].index_select(0, sampled));  // [S, L]
    labels.push_back(lab.index_select(0, sampled));                // [S]
    box_pred.push_back(rpn.deltas[i].index_select(0, pos));        // [P, 4]
    box_target.push_back(targets);
  }
  LayerScope scope("rpn.loss");
  auto all_logits = torch::cat(logits), all_labels = torch::cat(labels);
  torch::Tensor objectness;
  if (all_labels.numel() == 0) {
    objectness = all_logits.sum();  // no anchor inside the image: no objectness loss
  } else if (options_.rpn_softmax) {
    objectness = torch::nn::functional::cross_entropy(all_logits, all_labels);
  } else {
    objectness = torch::binary_cross_entropy_with_logits(all_logits.squeeze(1),
                                                         all_labels.to(all_logits.dtype()));
  }
  auto box = det::smooth_l1_sum(torch::cat(box_pred), torch::cat(box_target), options_.rpn_beta) /
             static_cast<double>(std::max<int64_t>(sampled_total, 1));
  return scope.output(objectness + options_.rpn_box_weight * box);
}

std::pair<torch::Tensor, torch::Tensor> FasterRcnnHeadsImpl::box_branch(
    const torch::Tensor& features, const torch::Tensor& rois, const BoxHead& box_head) {
  auto pooled = det::roi_align(features, rois, options_.pool_size, options_.pool_size,
                               1.0 / static_cast<double>(options_.feature_stride),
                               options_.sampling_ratio, options_.aligned,
                               "roi_heads.box_roi_pool");  // [K, C, p, p]
  if (options_.max_pool_after_crop) {
    LayerScope scope("roi_heads.box_roi_pool.max_pool");
    pooled = scope.output(torch::max_pool2d(pooled, {2, 2}, {2, 2}));  // [K, C, p/2, p/2]
  }
  auto x = box_head(pooled);                                                // [K, D]
  auto cls = run_layer("roi_heads.box_predictor.cls_score", cls_score, x);  // [K, classes]
  auto box = run_layer("roi_heads.box_predictor.bbox_pred", bbox_pred, x);  // [K, 4*classes]
  return {cls, box};
}

torch::Tensor FasterRcnnHeadsImpl::train_loss(const torch::Tensor& features, int64_t image_h,
                                              int64_t image_w, const torch::Tensor& gt_boxes,
                                              const torch::Tensor& gt_labels,
                                              const BoxHead& box_head) {
  auto rpn = rpn_head(features, image_h, image_w);
  auto loss = rpn_loss(rpn, image_h, image_w, gt_boxes);
  auto props = proposals(rpn, image_h, image_w, /*training=*/true);
  std::vector<torch::Tensor> rois, labels, targets;
  {
    LayerScope scope("roi_heads.select_training_samples");
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < props.size(); ++i) {
      auto gt = gt_boxes[static_cast<int64_t>(i)];
      auto cand = torch::cat({props[i], gt});                  // ground truth joins the candidates
      auto iou = det::box_iou(gt, cand, "roi_heads.box_iou");  // [G, P]
      det::Matcher matcher{options_.roi_fg_iou, options_.roi_bg_iou_low, false};
      auto matches = matcher(iou, "roi_heads.matcher");  // [P]
      auto lab = gt_labels[static_cast<int64_t>(i)].index_select(0, matches.clamp_min(0));
      lab.masked_fill_(matches == det::Matcher::kBetween, 0);
      lab.masked_fill_(matches == det::Matcher::kBelowLow, -1);
      auto [pos, neg] = det::sample_balanced(lab, options_.roi_batch,
                                             options_.roi_positive_fraction, "roi_heads.sampler");
      auto sampled = torch::cat({pos, neg});
      auto boxes = cand.index_select(0, sampled);  // [S, 4]
      auto matched = gt.index_select(0, matches.index_select(0, sampled).clamp_min(0));
      rois.push_back(torch::cat(
          {torch::full({boxes.size(0), 1}, static_cast<double>(i), boxes.options()), boxes}, 1));
      labels.push_back(lab.index_select(0, sampled));
      targets.push_back(roi_coder_.encode(matched, boxes, "roi_heads.box_coder"));
    }
  }
  auto all_rois = torch::cat(rois), all_labels = torch::cat(labels);  // [K, 5], [K]
  auto [cls, box] = box_branch(features, all_rois, box_head);
  LayerScope scope("roi_heads.loss");
  auto classification = torch::nn::functional::cross_entropy(cls, all_labels);
  // Box loss on the ground-truth class's regressor, positives only, averaged over all RoIs.
  auto pos = (all_labels > 0).nonzero().squeeze(1);
  auto pos_labels = all_labels.index_select(0, pos);
  // Row pos * classes + label of the [K * classes, 4] view.
  auto rows = pos * options_.classes + pos_labels;
  auto pred = box.reshape({-1, 4}).index_select(0, rows);  // [P, 4]
  auto box_loss =
      det::smooth_l1_sum(pred, torch::cat(targets).index_select(0, pos), options_.roi_beta) /
      static_cast<double>(std::max<int64_t>(all_labels.numel(), 1));
  return scope.output(loss + classification + options_.roi_box_weight * box_loss);
}

std::vector<torch::Tensor> FasterRcnnHeadsImpl::detect(const torch::Tensor& features,
                                                       int64_t image_h, int64_t image_w,
                                                       const BoxHead& box_head) {
  auto rpn = rpn_head(features, image_h, image_w);
  auto props = proposals(rpn, image_h, image_w, /*training=*/false);
  std::vector<torch::Tensor> rois;
  for (size_t i = 0; i < props.size(); ++i) {
    rois.push_back(torch::cat(
        {torch::full({props[i].size(0), 1}, static_cast<double>(i), props[i].options()), props[i]},
        1));
  }
  auto [cls, box] = box_branch(features, torch::cat(rois), box_head);
  std::vector<torch::Tensor> result;
  int64_t start = 0;
  const int64_t classes = options_.classes;
  for (const auto& p : props) {
    LayerScope scope("roi_heads.postprocess_detections");
    const int64_t k = p.size(0);
    auto probs = cls.slice(0, start, start + k).softmax(1);  // [k, classes]
    auto boxes = roi_coder_.decode(box.slice(0, start, start + k), p, "roi_heads.box_coder");
    start += k;
    boxes = det::clip_boxes(boxes.view({-1, 4}), image_h, image_w, "roi_heads.clip_boxes")
                .view({k, classes, 4});
    // Drop the background column, flatten (RoI, class) pairs.
    auto labels = torch::arange(classes, probs.options().dtype(torch::kLong))
                      .view({1, -1})
                      .expand({k, classes})
                      .slice(1, 1)
                      .reshape({-1});
    auto flat_boxes = boxes.slice(1, 1).reshape({-1, 4});
    auto scores = probs.slice(1, 1).reshape({-1});
    auto keep = (scores > options_.score_thresh).nonzero().squeeze(1);
    flat_boxes = flat_boxes.index_select(0, keep);
    scores = scores.index_select(0, keep);
    labels = labels.index_select(0, keep);
    keep = det::remove_small_boxes(flat_boxes, 1e-2, "roi_heads.remove_small_boxes");
    flat_boxes = flat_boxes.index_select(0, keep);
    scores = scores.index_select(0, keep);
    labels = labels.index_select(0, keep);
    keep = det::batched_nms(flat_boxes, scores, labels, options_.nms_thresh, options_.detections,
                            "roi_heads.batched_nms");
    result.push_back(scope.output(
        torch::cat({flat_boxes.index_select(0, keep), scores.index_select(0, keep).unsqueeze(1),
                    labels.index_select(0, keep).unsqueeze(1).to(flat_boxes.dtype())},
                   1)));  // [D, 6]
  }
  return result;
}

std::pair<torch::Tensor, torch::Tensor> synthetic_gt_boxes(int64_t batch, int64_t boxes_per_image,
                                                           int64_t height, int64_t width,
                                                           double min_side, double max_side,
                                                           int64_t classes,
                                                           const torch::Device& device) {
  auto shape = std::vector<int64_t>{batch, boxes_per_image};
  auto log_side = torch::rand(shape) * std::log(max_side / min_side) + std::log(min_side);
  auto log_ratio = (torch::rand(shape) * 2 - 1) * std::log(2.0);  // h / w in [0.5, 2]
  auto side = log_side.exp();
  auto w = (side * (-0.5 * log_ratio).exp()).clamp_max(static_cast<double>(width));
  auto h = (side * (0.5 * log_ratio).exp()).clamp_max(static_cast<double>(height));
  auto x1 = torch::rand(shape) * (width - w);
  auto y1 = torch::rand(shape) * (height - h);
  auto boxes = torch::stack({x1, y1, x1 + w, y1 + h}, 2);  // [B, G, 4]
  auto labels = torch::randint(1, classes, shape, torch::kLong);
  return {boxes.to(device), labels.to(device)};
}

namespace {

class FasterRcnnModel : public Model {
 public:
  FasterRcnnModel(std::shared_ptr<nn::Module> root,
                  std::function<torch::Tensor(const torch::Tensor&)> trunk, BoxHead box_head,
                  FasterRcnnHeads heads, const DetectionDataSpec& data, double lr, double momentum,
                  double weight_decay, const torch::Device& device)
      : root_(std::move(root)),
        trunk_(std::move(trunk)),
        box_head_(std::move(box_head)),
        heads_(std::move(heads)),
        data_(data),
        device_(device) {
    root_->to(device);
    std::vector<torch::Tensor> trainable;
    for (auto& p : root_->parameters())
      if (p.requires_grad()) trainable.push_back(p);
    optimizer_ = std::make_unique<torch::optim::SGD>(
        trainable, torch::optim::SGDOptions(lr).momentum(momentum).weight_decay(weight_decay));
  }

  nn::Module& module() override { return *root_; }

  Batch make_batch() override {
    Batch b;
    auto images = torch::randn({data_.batch, 3, data_.height, data_.width}).to(device_);
    auto [boxes, labels] =
        synthetic_gt_boxes(data_.batch, data_.boxes_per_image, data_.height, data_.width,
                           data_.min_side, data_.max_side, data_.classes, device_);
    b.tensors = {images, boxes, labels};
    b.units = static_cast<double>(data_.batch);
    return b;
  }

  double train_step(const Batch& batch) override {
    const auto& images = batch.tensors.at(0);  // [B, 3, H, W]
    optimizer_->zero_grad();
    auto features = trunk_(images);  // [B, C, H/16, W/16]
    auto loss = heads_->train_loss(features, images.size(2), images.size(3), batch.tensors.at(1),
                                   batch.tensors.at(2), box_head_);
    loss.backward();
    optimizer_->step();
    return loss.item<double>();
  }

  double infer_step(const Batch& batch) override {
    const auto& images = batch.tensors.at(0);
    auto detections = heads_->detect(trunk_(images), images.size(2), images.size(3), box_head_);
    double summary = 0;
    for (const auto& d : detections) summary += d.sum().item<double>();
    return summary;
  }

 private:
  std::shared_ptr<nn::Module> root_;
  std::function<torch::Tensor(const torch::Tensor&)> trunk_;
  BoxHead box_head_;
  FasterRcnnHeads heads_;
  DetectionDataSpec data_;
  torch::Device device_;
  std::unique_ptr<torch::optim::SGD> optimizer_;
};

}  // namespace

Config faster_rcnn_config(const FasterRcnnDefaults& d,
                          const std::map<std::string, std::string>& docs) {
  auto doc = [&](const std::string& key, const std::string& generic) {
    const auto specific = docs.find(key);
    return specific == docs.end() ? generic + " (" + d.source + ")" : specific->second;
  };
  Config c;
  c.add_int("batch", d.batch, doc("batch", "images per iteration"));
  c.add_int("image_height", d.image_height, doc("image_height", "input height"), 32);
  c.add_int("image_width", d.image_width, doc("image_width", "input width"), 32);
  c.add_int("classes", d.classes, doc("classes", "classes incl. background"), 2);
  c.add_int("gt_boxes", d.gt_boxes, doc("gt_boxes", "ground-truth objects per image"));
  c.add_double("min_box_side", d.min_box_side,
               doc("min_box_side", "smallest synthetic object, sqrt(area) px"), 1);
  c.add_double("max_box_side", d.max_box_side,
               doc("max_box_side", "largest synthetic object, sqrt(area) px"), 1);
  c.add_int("rpn_pre_nms_train", d.pre_nms_train,
            doc("rpn_pre_nms_train", "RPN boxes before NMS, training"));
  c.add_int("rpn_post_nms_train", d.post_nms_train,
            doc("rpn_post_nms_train", "RPN proposals after NMS, training"));
  c.add_int("rpn_pre_nms_test", d.pre_nms_test,
            doc("rpn_pre_nms_test", "RPN boxes before NMS, test"));
  c.add_int("rpn_post_nms_test", d.post_nms_test,
            doc("rpn_post_nms_test", "RPN proposals after NMS, test"));
  c.add_int("rpn_batch", d.rpn_batch,
            doc("rpn_batch", "anchors sampled per image for the RPN loss"));
  c.add_int("roi_batch", d.roi_batch, doc("roi_batch", "RoIs sampled per image for the head loss"));
  c.add_int("pool_size", d.pool_size, doc("pool_size", "RoI crop size"), 2);
  c.add_int("detections", d.detections, doc("detections", "detections kept per image at test"));
  c.add_double("lr", d.lr, doc("lr", "SGD learning rate"));
  c.add_double("momentum", d.momentum, doc("momentum", "SGD momentum"));
  c.add_double("weight_decay", d.weight_decay, doc("weight_decay", "L2 weight decay"));
  return c;
}

void read_faster_rcnn_config(const Config& c, FasterRcnnOptions& o) {
  o.classes = c.get_int("classes");
  o.pre_nms_train = c.get_int("rpn_pre_nms_train");
  o.post_nms_train = c.get_int("rpn_post_nms_train");
  o.pre_nms_test = c.get_int("rpn_pre_nms_test");
  o.post_nms_test = c.get_int("rpn_post_nms_test");
  o.rpn_batch = c.get_int("rpn_batch");
  o.roi_batch = c.get_int("roi_batch");
  o.pool_size = c.get_int("pool_size");
  o.detections = c.get_int("detections");
}

DetectionDataSpec detection_data_from_config(const Config& c) {
  DetectionDataSpec data;
  data.batch = c.get_int("batch");
  data.height = c.get_int("image_height");
  data.width = c.get_int("image_width");
  data.boxes_per_image = c.get_int("gt_boxes");
  data.min_side = c.get_double("min_box_side");
  data.max_side = c.get_double("max_box_side");
  data.classes = c.get_int("classes");
  return data;
}

std::unique_ptr<Model> make_faster_rcnn_model(
    std::shared_ptr<nn::Module> root, std::function<torch::Tensor(const torch::Tensor&)> trunk,
    BoxHead box_head, FasterRcnnHeads heads, const DetectionDataSpec& data, double lr,
    double momentum, double weight_decay, const torch::Device& device) {
  return std::make_unique<FasterRcnnModel>(std::move(root), std::move(trunk), std::move(box_head),
                                           std::move(heads), data, lr, momentum, weight_decay,
                                           device);
}

}  // namespace plumb::workloads
