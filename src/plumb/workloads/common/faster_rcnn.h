// The Faster R-CNN detection stages (Ren et al., NeurIPS 2015) shared by the detection
// workloads: the region proposal network (3x3 conv + objectness + box deltas over
// anchors, proposal decoding and NMS, anchor targets and losses) and the RoI heads (proposal
// targets and sampling, RoIAlign, a workload-supplied per-RoI box head, class and box
// predictors, losses, and inference post-processing: per-class decode, score threshold,
// batched NMS, top detections). The trunk and the per-RoI box head are the workload's
// (ResNet-101 C4 for TBD, ShuffleNet for the Facebook inference study).
//
// Module names follow torchvision's FasterRCNN ("rpn.head.conv", "rpn.head.cls_logits",
// "roi_heads.box_predictor.cls_score") so parameters compare name by name. Detection
// operators come from detection_ops.h (LibTorch ops, no torchvision).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "plumb/core/workload.h"
#include "plumb/workloads/common/detection_ops.h"

namespace plumb::workloads {

struct FasterRcnnOptions {
  int64_t classes = 21;         // including background (class 0)
  int64_t in_channels = 1024;   // channels of the trunk's feature map
  int64_t feature_stride = 16;  // image pixels per feature-map cell
  int64_t rpn_channels = 512;   // width of the RPN's 3x3 conv
  std::vector<double> anchor_sizes{128, 256, 512};
  std::vector<double> aspect_ratios{0.5, 1.0, 2.0};
  bool rpn_softmax = true;  // 2 logits per anchor + softmax, else 1 logit + sigmoid
  int64_t pre_nms_train = 12000, post_nms_train = 2000;
  int64_t pre_nms_test = 6000, post_nms_test = 300;
  double rpn_nms = 0.7, rpn_fg_iou = 0.7, rpn_bg_iou = 0.3, rpn_min_size = 1e-3;
  bool rpn_drop_cross_boundary = true;  // anchors crossing the image border are ignored
  int64_t rpn_batch = 256;
  double rpn_positive_fraction = 0.5, rpn_beta = 1.0 / 9.0, rpn_box_weight = 1.0;
  int64_t roi_batch = 128;
  double roi_positive_fraction = 0.25, roi_fg_iou = 0.5, roi_bg_iou_low = 0.0;
  double roi_beta = 1.0, roi_box_weight = 1.0;
  std::array<double, 4> roi_box_coder_weights{10.0, 10.0, 5.0, 5.0};
  int64_t pool_size = 14;      // RoIAlign output (pool_size x pool_size)
  int64_t sampling_ratio = 2;  // bilinear samples per bin side
  bool aligned = false;
  bool max_pool_after_crop = false;  // 2x2 max pool after the crop (tf-faster-rcnn)
  double score_thresh = 0.0, nms_thresh = 0.3;
  int64_t detections = 100;
};

// Batch norm frozen as detection trunks use it (Detectron's AffineChannel, TF-slim
// is_training=False with trainable=False, torchvision's FrozenBatchNorm2d folded):
// y = x * scale + shift with both as buffers, so neither trained nor updated. The reference
// trunks start from ImageNet weights whose BN statistics keep activations near unit scale;
// with random weights, calibrate_frozen_norms() sets scale/shift from one forward pass the way
// those running statistics would (per-channel mean 0, mean variance 1), so deep trunks neither
// overflow nor vanish. [B, C, H, W] -> same.
class FrozenNormImpl : public torch::nn::Module {
 public:
  // gain: calibrated output scale; < 1 at the end of residual branches keeps the residual
  // stream near unit scale, as the small final-BN gammas of trained ResNets do.
  explicit FrozenNormImpl(int64_t channels, double gain = 1.0);
  torch::Tensor forward(const torch::Tensor& x);
  bool calibrating = false;
  double gain;

 private:
  torch::Tensor scale_, shift_;
};
TORCH_MODULE(FrozenNorm);

// Runs `forward` once (no grad) with every FrozenNorm under `root` calibrating.
void calibrate_frozen_norms(torch::nn::Module& root, const std::function<void()>& forward);

// Per-RoI feature extractor: [K, C, p, p] -> [K, head_dim]. Runs under the caller's scopes.
using BoxHead = std::function<torch::Tensor(const torch::Tensor&)>;

class FasterRcnnHeadsImpl : public torch::nn::Module {
 public:
  FasterRcnnHeadsImpl(const FasterRcnnOptions& options, int64_t head_dim);

  // Training: features [B, C, h, w] of images [B, 3, H, W]; gt_boxes [B, G, 4] (xyxy pixels),
  // gt_labels [B, G] int64 in [1, classes). Returns the summed loss (RPN objectness + box,
  // RoI classification + box).
  torch::Tensor train_loss(const torch::Tensor& features, int64_t image_h, int64_t image_w,
                           const torch::Tensor& gt_boxes, const torch::Tensor& gt_labels,
                           const BoxHead& box_head);

  // Inference: per image, the kept detections (<= options.detections) as [D, 6]
  // (x1, y1, x2, y2, score, label).
  std::vector<torch::Tensor> detect(const torch::Tensor& features, int64_t image_h, int64_t image_w,
                                    const BoxHead& box_head);

  const FasterRcnnOptions& options() const { return options_; }

 private:
  struct RpnOutput {
    torch::Tensor objectness;  // [B, N, L] logits, L = 2 (softmax) or 1 (sigmoid)
    torch::Tensor deltas;      // [B, N, 4]
    torch::Tensor anchors;     // [N, 4]
  };
  RpnOutput rpn_head(const torch::Tensor& features, int64_t image_h, int64_t image_w);
  std::vector<torch::Tensor> proposals(const RpnOutput& rpn, int64_t image_h, int64_t image_w,
                                       bool training);
  torch::Tensor rpn_loss(const RpnOutput& rpn, int64_t image_h, int64_t image_w,
                         const torch::Tensor& gt_boxes);
  // rois [K, 5] -> (class logits [K, classes], box deltas [K, 4*classes])
  std::pair<torch::Tensor, torch::Tensor> box_branch(const torch::Tensor& features,
                                                     const torch::Tensor& rois,
                                                     const BoxHead& box_head);

  FasterRcnnOptions options_;
  torch::Tensor cell_anchors_;
  det::BoxCoder rpn_coder_;
  det::BoxCoder roi_coder_;
  torch::nn::Conv2d rpn_conv{nullptr}, rpn_cls{nullptr}, rpn_bbox{nullptr};
  torch::nn::Linear cls_score{nullptr}, bbox_pred{nullptr};
};
TORCH_MODULE(FasterRcnnHeads);

// Synthetic detection targets for `batch` images of height x width: `boxes_per_image`
// ground-truth boxes each, side sqrt(area) log-uniform in [min_side, max_side], aspect ratio
// log-uniform in [0.5, 2], placed uniformly inside the image -> ([B, G, 4] float, [B, G] int64
// labels uniform in [1, classes)).
std::pair<torch::Tensor, torch::Tensor> synthetic_gt_boxes(int64_t batch, int64_t boxes_per_image,
                                                           int64_t height, int64_t width,
                                                           double min_side, double max_side,
                                                           int64_t classes,
                                                           const torch::Device& device);

// The images and ground truth a detector trains on.
struct DetectionDataSpec {
  int64_t batch = 1;
  int64_t height = 600, width = 1000;
  int64_t boxes_per_image = 3;
  double min_side = 32, max_side = 400;  // ground-truth sqrt(area) range in pixels
  int64_t classes = 21;                  // including background
};

// Defaults of the config keys every Faster R-CNN workload has (data, proposals, sampling,
// detections, SGD), each documented with `source` (the implementation the numbers come from).
struct FasterRcnnDefaults {
  std::string source;
  int64_t batch = 1, image_height = 600, image_width = 1000, classes = 21, gt_boxes = 3;
  double min_box_side = 32, max_box_side = 480;
  int64_t pre_nms_train = 12000, post_nms_train = 2000, pre_nms_test = 6000, post_nms_test = 300;
  int64_t rpn_batch = 256, roi_batch = 128, pool_size = 14, detections = 100;
  double lr = 0.001, momentum = 0.9, weight_decay = 1e-4;
};

// Declares the shared keys: batch, image_height/width, classes, gt_boxes,
// min/max_box_side, rpn_{pre,post}_nms_{train,test}, rpn_batch, roi_batch, pool_size,
// detections, lr, momentum, weight_decay. `docs` overrides the generic doc of the keys it has.
Config faster_rcnn_config(const FasterRcnnDefaults& d,
                          const std::map<std::string, std::string>& docs);
// Copies the shared proposal / sampling / detection keys into `o`.
void read_faster_rcnn_config(const Config& c, FasterRcnnOptions& o);
// The data keys as a DetectionDataSpec.
DetectionDataSpec detection_data_from_config(const Config& c);

// A Faster R-CNN Model (core/workload.h) from its parts: `root` owns every parameter;
// `trunk` maps images [B, 3, H, W] to features [B, C, H/stride, W/stride]; `box_head` maps
// pooled RoIs to [K, D]. Batches: tensors = {images [B, 3, H, W] N(0, 1), gt boxes [B, G, 4],
// gt labels [B, G] int64}, units = B images. Trains with SGD (momentum, weight decay) over the
// parameters that require grad.
std::unique_ptr<Model> make_faster_rcnn_model(
    std::shared_ptr<torch::nn::Module> root,
    std::function<torch::Tensor(const torch::Tensor&)> trunk, BoxHead box_head,
    FasterRcnnHeads heads, const DetectionDataSpec& data, double lr, double momentum,
    double weight_decay, const torch::Device& device);

// The same for a network that has `trunk(images)`, `box_head(pooled)` and `heads`, with the data
// and the SGD settings (lr, momentum, weight_decay) of config `c`.
template <class NetPtr>
std::unique_ptr<Model> make_faster_rcnn_model(const NetPtr& net, const Config& c,
                                              const torch::Device& device) {
  return make_faster_rcnn_model(
      net, [net](const torch::Tensor& x) { return net->trunk(x); },
      [net](const torch::Tensor& p) { return net->box_head(p); }, net->heads,
      detection_data_from_config(c), c.get_double("lr"), c.get_double("momentum"),
      c.get_double("weight_decay"), device);
}

}  // namespace plumb::workloads
