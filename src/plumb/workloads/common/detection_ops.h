// Detection operators shared by the detection workloads (Faster R-CNN, RetinaNet): box IoU,
// anchor generation, the box coder, NMS, the proposal matcher and sampler, RoIAlign, box
// clipping and small-box removal, and the smooth-L1 loss.
//
// LibTorch 1.13 ships no torchvision ops, so everything here is written on LibTorch operators
// (so the profiler costs them) or, for the greedy NMS loop, plain C++ over a CPU accessor (as
// torchvision's own CPU kernel is). Semantics follow torchvision 0.14 (ops.boxes,
// models.detection.{anchor_utils, _utils}, ops.roi_align), so results match it number for
// number. Boxes are [N, 4] float (x1, y1, x2, y2) in image pixels.
//
// Each op opens a LayerScope named by its `layer` argument (pass the module path, e.g.
// "rpn.nms"), so the profiler attributes its operators to the detection stage that ran it.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

namespace plumb::workloads::det {

// Areas of boxes [N, 4] -> [N].
torch::Tensor box_area(const torch::Tensor& boxes);

// Pairwise IoU of a [N, 4] and b [M, 4] -> [N, M] (torchvision.ops.box_iou).
torch::Tensor box_iou(const torch::Tensor& a, const torch::Tensor& b,
                      const std::string& layer = "box_iou");

// torchvision AnchorGenerator.generate_anchors: zero-centred anchors for every (aspect ratio,
// size) pair, ratio-major: h = size * sqrt(r), w = size / sqrt(r), rounded -> [R*S, 4].
torch::Tensor cell_anchors(const std::vector<double>& sizes,
                           const std::vector<double>& aspect_ratios,
                           const torch::Device& device = torch::kCPU);

// torchvision AnchorGenerator.grid_anchors: cell anchors shifted to every feature-map location
// (x = j * stride_w, y = i * stride_h), location-major then anchor -> [H*W*A, 4], the order of
// the head outputs permuted to [B, H, W, A, ...]. Runs under LayerScope(layer).
torch::Tensor grid_anchors(const torch::Tensor& cell_anchors, int64_t feat_h, int64_t feat_w,
                           int64_t stride_h, int64_t stride_w,
                           const std::string& layer = "anchor_generator");

// torchvision BoxCoder: (dx, dy, dw, dh) regression targets scaled by `weights`, with dw/dh
// clamped to log(1000/16) before exp() on decode.
struct BoxCoder {
  std::array<double, 4> weights{1.0, 1.0, 1.0, 1.0};
  double bbox_xform_clip = std::log(1000.0 / 16.0);

  // Targets that move `proposals` [N, 4] onto `matched_gt` [N, 4] -> [N, 4].
  torch::Tensor encode(const torch::Tensor& matched_gt, const torch::Tensor& proposals,
                       const std::string& layer = "box_coder.encode") const;
  // Applies `rel_codes` [N, 4*K] (K boxes per row, e.g. one per class) to `boxes` [N, 4]
  // -> [N, 4*K] boxes.
  torch::Tensor decode(const torch::Tensor& rel_codes, const torch::Tensor& boxes,
                       const std::string& layer = "box_coder.decode") const;
};

// Greedy NMS (torchvision.ops.nms): indices (int64, CPU->boxes' device) of the kept boxes in
// decreasing score order. `max_output` >= 0 stops once that many are kept (same result as
// keep[:max_output], cheaper). boxes [N, 4], scores [N].
torch::Tensor nms(const torch::Tensor& boxes, const torch::Tensor& scores, double iou_threshold,
                  int64_t max_output = -1, const std::string& layer = "nms");

// Per-class NMS in one pass (torchvision.ops.batched_nms): boxes of different `idxs` [N] are
// offset by idx * (max coordinate + 1) so they never overlap.
torch::Tensor batched_nms(const torch::Tensor& boxes, const torch::Tensor& scores,
                          const torch::Tensor& idxs, double iou_threshold, int64_t max_output = -1,
                          const std::string& layer = "batched_nms");

// torchvision det_utils.Matcher: for an IoU matrix [G, N] (ground truth x predictions) returns
// [N] int64: the matched gt index, kBelowLow (-1) when IoU < low, kBetween (-2) when
// low <= IoU < high. allow_low_quality_matches also keeps, for each gt, the predictions with
// its highest IoU. With G == 0 every prediction is kBelowLow.
struct Matcher {
  static constexpr int64_t kBelowLow = -1;
  static constexpr int64_t kBetween = -2;
  double high = 0.7;
  double low = 0.3;
  bool allow_low_quality_matches = false;
  torch::Tensor operator()(const torch::Tensor& iou, const std::string& layer = "matcher") const;
};

// torchvision BalancedPositiveNegativeSampler for one image: `labels` [N] int64 (>= 1 positive,
// 0 negative, < 0 ignored). Draws at most batch_size_per_image * positive_fraction positives
// and fills the rest with negatives, uniformly at random (torch's generator).
// Returns (positive indices, negative indices), int64.
std::pair<torch::Tensor, torch::Tensor> sample_balanced(const torch::Tensor& labels,
                                                        int64_t batch_size_per_image,
                                                        double positive_fraction,
                                                        const std::string& layer = "sampler");

// torchvision.ops.roi_align: features [B, C, H, W], rois [K, 5] (batch index, x1, y1, x2, y2 in
// image pixels) -> [K, C, out_h, out_w]. Each bin averages sampling_ratio x sampling_ratio
// bilinear samples (sampling_ratio must be > 0: torchvision's adaptive mode is not supported);
// aligned shifts by half a pixel. Written as index_select gathers of the four bilinear
// corners times their weights, so the backward pass (index_add) reaches `features`.
torch::Tensor roi_align(const torch::Tensor& features, const torch::Tensor& rois, int64_t out_h,
                        int64_t out_w, double spatial_scale, int64_t sampling_ratio, bool aligned,
                        const std::string& layer = "roi_align");

// Clamps x to [0, width] and y to [0, height] (torchvision clip_boxes_to_image).
torch::Tensor clip_boxes(const torch::Tensor& boxes, int64_t height, int64_t width,
                         const std::string& layer = "clip_boxes");

// Indices of boxes whose width and height are both >= min_size (remove_small_boxes).
torch::Tensor remove_small_boxes(const torch::Tensor& boxes, double min_size,
                                 const std::string& layer = "remove_small_boxes");

// Smooth-L1 (Huber / beta) loss summed over all elements, built from elementwise ops:
// 0.5 d^2 / beta for |d| < beta, |d| - 0.5 beta otherwise; beta == 0 is plain L1.
torch::Tensor smooth_l1_sum(const torch::Tensor& input, const torch::Tensor& target, double beta);

}  // namespace plumb::workloads::det
