// Detection operators on LibTorch ops / plain C++ (see detection_ops.h for the semantics, which
// follow torchvision 0.14).
#include "plumb/workloads/common/detection_ops.h"

#include <algorithm>

#include "plumb/core/layer_scope.h"

namespace plumb::workloads::det {

namespace {

using torch::indexing::None;
using torch::indexing::Slice;

// Greedy suppression over a CPU copy, as torchvision's CPU kernel: visit boxes in decreasing
// score, keep one, suppress every later box overlapping it by more than the threshold.
torch::Tensor greedy_nms(const torch::Tensor& boxes, const torch::Tensor& scores,
                         double iou_threshold, int64_t max_output) {
  auto order = std::get<1>(scores.to(torch::kCPU, torch::kFloat).sort(0, /*descending=*/true));
  auto b = boxes.to(torch::kCPU, torch::kFloat).index_select(0, order).contiguous();  // [N, 4]
  const int64_t n = b.size(0);
  auto acc = b.accessor<float, 2>();
  auto ord = order.accessor<int64_t, 1>();
  std::vector<float> area(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) area[i] = (acc[i][2] - acc[i][0]) * (acc[i][3] - acc[i][1]);
  std::vector<char> suppressed(static_cast<size_t>(n), 0);
  std::vector<int64_t> keep;
  const int64_t limit = max_output < 0 ? n : max_output;
  for (int64_t i = 0; i < n && static_cast<int64_t>(keep.size()) < limit; ++i) {
    if (suppressed[i]) continue;
    keep.push_back(ord[i]);
    const float x1 = acc[i][0], y1 = acc[i][1], x2 = acc[i][2], y2 = acc[i][3];
    for (int64_t j = i + 1; j < n; ++j) {
      if (suppressed[j]) continue;
      const float w = std::max(0.0f, std::min(x2, acc[j][2]) - std::max(x1, acc[j][0]));
      const float h = std::max(0.0f, std::min(y2, acc[j][3]) - std::max(y1, acc[j][1]));
      const float inter = w * h;
      if (inter / (area[i] + area[j] - inter) > static_cast<float>(iou_threshold))
        suppressed[j] = 1;
    }
  }
  return torch::tensor(keep, torch::kLong).to(boxes.device());
}

}  // namespace

torch::Tensor box_area(const torch::Tensor& boxes) {
  return (boxes.select(1, 2) - boxes.select(1, 0)) * (boxes.select(1, 3) - boxes.select(1, 1));
}

torch::Tensor box_iou(const torch::Tensor& a, const torch::Tensor& b, const std::string& layer) {
  LayerScope scope(layer);
  auto area_a = box_area(a);  // [N]
  auto area_b = box_area(b);  // [M]
  auto lt = torch::max(a.index({Slice(), None, Slice(0, 2)}), b.index({Slice(), Slice(0, 2)}));
  auto rb = torch::min(a.index({Slice(), None, Slice(2, 4)}), b.index({Slice(), Slice(2, 4)}));
  auto wh = (rb - lt).clamp_min(0);                // [N, M, 2]
  auto inter = wh.select(2, 0) * wh.select(2, 1);  // [N, M]
  return scope.output(inter / (area_a.unsqueeze(1) + area_b.unsqueeze(0) - inter));
}

torch::Tensor cell_anchors(const std::vector<double>& sizes,
                           const std::vector<double>& aspect_ratios, const torch::Device& device) {
  auto opts = torch::TensorOptions().dtype(torch::kFloat).device(device);
  auto scales = torch::tensor(std::vector<float>(sizes.begin(), sizes.end()), opts);  // [S]
  auto ratios =
      torch::tensor(std::vector<float>(aspect_ratios.begin(), aspect_ratios.end()), opts);  // [R]
  auto h_ratios = ratios.sqrt();
  auto w_ratios = 1 / h_ratios;
  auto ws = (w_ratios.unsqueeze(1) * scales.unsqueeze(0)).reshape({-1});  // [R*S]
  auto hs = (h_ratios.unsqueeze(1) * scales.unsqueeze(0)).reshape({-1});
  return (torch::stack({-ws, -hs, ws, hs}, 1) / 2).round();  // [R*S, 4]
}

torch::Tensor grid_anchors(const torch::Tensor& cell, int64_t feat_h, int64_t feat_w,
                           int64_t stride_h, int64_t stride_w, const std::string& layer) {
  LayerScope scope(layer);
  auto opts = torch::TensorOptions().dtype(torch::kFloat).device(cell.device());
  auto sx = torch::arange(0, feat_w, opts) * static_cast<double>(stride_w);  // [W]
  auto sy = torch::arange(0, feat_h, opts) * static_cast<double>(stride_h);  // [H]
  auto shift_y = sy.unsqueeze(1).expand({feat_h, feat_w}).reshape({-1});     // [H*W], row-major
  auto shift_x = sx.unsqueeze(0).expand({feat_h, feat_w}).reshape({-1});
  auto shifts = torch::stack({shift_x, shift_y, shift_x, shift_y}, 1);  // [H*W, 4]
  return scope.output((shifts.view({-1, 1, 4}) + cell.view({1, -1, 4})).reshape({-1, 4}));
}

torch::Tensor BoxCoder::encode(const torch::Tensor& gt, const torch::Tensor& proposals,
                               const std::string& layer) const {
  LayerScope scope(layer);
  auto ex_w = proposals.select(1, 2) - proposals.select(1, 0);  // [N]
  auto ex_h = proposals.select(1, 3) - proposals.select(1, 1);
  auto ex_x = proposals.select(1, 0) + 0.5 * ex_w;
  auto ex_y = proposals.select(1, 1) + 0.5 * ex_h;
  auto gt_w = gt.select(1, 2) - gt.select(1, 0);
  auto gt_h = gt.select(1, 3) - gt.select(1, 1);
  auto gt_x = gt.select(1, 0) + 0.5 * gt_w;
  auto gt_y = gt.select(1, 1) + 0.5 * gt_h;
  auto dx = weights[0] * (gt_x - ex_x) / ex_w;
  auto dy = weights[1] * (gt_y - ex_y) / ex_h;
  auto dw = weights[2] * (gt_w / ex_w).log();
  auto dh = weights[3] * (gt_h / ex_h).log();
  return scope.output(torch::stack({dx, dy, dw, dh}, 1));  // [N, 4]
}

torch::Tensor BoxCoder::decode(const torch::Tensor& rel_codes, const torch::Tensor& boxes,
                               const std::string& layer) const {
  LayerScope scope(layer);
  auto b = boxes.to(rel_codes.dtype());
  auto widths = (b.select(1, 2) - b.select(1, 0)).unsqueeze(1);  // [N, 1]
  auto heights = (b.select(1, 3) - b.select(1, 1)).unsqueeze(1);
  auto ctr_x = b.select(1, 0).unsqueeze(1) + 0.5 * widths;
  auto ctr_y = b.select(1, 1).unsqueeze(1) + 0.5 * heights;
  const int64_t n = rel_codes.size(0), k = rel_codes.size(1) / 4;
  auto codes = rel_codes.reshape({n, k, 4});  // [N, K, 4]
  auto dx = codes.select(2, 0) / weights[0];  // [N, K]
  auto dy = codes.select(2, 1) / weights[1];
  auto dw = (codes.select(2, 2) / weights[2]).clamp_max(bbox_xform_clip);
  auto dh = (codes.select(2, 3) / weights[3]).clamp_max(bbox_xform_clip);
  auto px = dx * widths + ctr_x;
  auto py = dy * heights + ctr_y;
  auto half_w = 0.5 * dw.exp() * widths;
  auto half_h = 0.5 * dh.exp() * heights;
  auto out = torch::stack({px - half_w, py - half_h, px + half_w, py + half_h}, 2);  // [N, K, 4]
  return scope.output(out.reshape({n, 4 * k}));                                      // [N, 4K]
}

torch::Tensor nms(const torch::Tensor& boxes, const torch::Tensor& scores, double iou_threshold,
                  int64_t max_output, const std::string& layer) {
  LayerScope scope(layer);
  return scope.output(greedy_nms(boxes, scores, iou_threshold, max_output));
}

torch::Tensor batched_nms(const torch::Tensor& boxes, const torch::Tensor& scores,
                          const torch::Tensor& idxs, double iou_threshold, int64_t max_output,
                          const std::string& layer) {
  LayerScope scope(layer);
  if (boxes.size(0) == 0)
    return scope.output(torch::empty({0}, idxs.options().dtype(torch::kLong)));
  auto offsets = idxs.to(boxes.dtype()) * (boxes.max() + 1);  // [N]
  auto shifted = boxes + offsets.unsqueeze(1);                // [N, 4]
  return scope.output(greedy_nms(shifted, scores, iou_threshold, max_output));
}

torch::Tensor Matcher::operator()(const torch::Tensor& iou, const std::string& layer) const {
  LayerScope scope(layer);
  if (iou.size(0) == 0) {
    return scope.output(torch::full({iou.size(1)}, kBelowLow, iou.options().dtype(torch::kLong)));
  }
  auto [vals, matches] = iou.max(0);  // [N] best gt per prediction
  auto all_matches = matches.clone();
  matches.masked_fill_(vals < low, kBelowLow);
  matches.masked_fill_((vals >= low).logical_and(vals < high), kBetween);
  if (allow_low_quality_matches) {
    // Each gt keeps the predictions of its highest IoU even when that IoU is below `high`.
    auto best_per_gt = std::get<0>(iou.max(1));                // [G]
    auto pairs = (iou == best_per_gt.unsqueeze(1)).nonzero();  // [P, 2]
    auto pred = pairs.select(1, 1);
    matches.index_put_({pred}, all_matches.index({pred}));
  }
  return scope.output(matches);
}

std::pair<torch::Tensor, torch::Tensor> sample_balanced(const torch::Tensor& labels,
                                                        int64_t batch_size_per_image,
                                                        double positive_fraction,
                                                        const std::string& layer) {
  LayerScope scope(layer);
  auto positive = (labels >= 1).nonzero().squeeze(1);
  auto negative = (labels == 0).nonzero().squeeze(1);
  int64_t num_pos = static_cast<int64_t>(batch_size_per_image * positive_fraction);
  num_pos = std::min(positive.numel(), num_pos);
  const int64_t num_neg = std::min(negative.numel(), batch_size_per_image - num_pos);
  auto long_opts = labels.options().dtype(torch::kLong);
  auto perm_pos = torch::randperm(positive.numel(), long_opts).slice(0, 0, num_pos);
  auto perm_neg = torch::randperm(negative.numel(), long_opts).slice(0, 0, num_neg);
  return {positive.index_select(0, perm_pos), negative.index_select(0, perm_neg)};
}

torch::Tensor roi_align(const torch::Tensor& features, const torch::Tensor& rois, int64_t out_h,
                        int64_t out_w, double spatial_scale, int64_t sampling_ratio, bool aligned,
                        const std::string& layer) {
  TORCH_CHECK(sampling_ratio > 0, "roi_align: sampling_ratio must be > 0");
  LayerScope scope(layer);
  const int64_t channels = features.size(1), height = features.size(2), width = features.size(3);
  const int64_t k = rois.size(0), s = sampling_ratio;
  auto opts = torch::TensorOptions().dtype(torch::kFloat).device(features.device());
  torch::Tensor idx, weights;  // [4, P] corner indices / weights, P = K * out_h*s * out_w*s
  {
    // Sample coordinates depend only on the RoIs (no gradient flows into them, as in
    // torchvision's kernel).
    torch::NoGradGuard no_grad;
    auto r = rois.to(opts);
    const double offset = aligned ? 0.5 : 0.0;
    auto x0 = r.select(1, 1) * spatial_scale - offset;  // [K]
    auto y0 = r.select(1, 2) * spatial_scale - offset;
    auto rw = r.select(1, 3) * spatial_scale - offset - x0;
    auto rh = r.select(1, 4) * spatial_scale - offset - y0;
    if (!aligned) {
      rw = rw.clamp_min(1.0);
      rh = rh.clamp_min(1.0);
    }
    // Sample positions within the RoI, in units of a bin: (p + (i + 0.5) / s) for bin p.
    auto fy = (torch::arange(out_h * s, opts) + 0.5) / static_cast<double>(s);  // [out_h*s]
    auto fx = (torch::arange(out_w * s, opts) + 0.5) / static_cast<double>(s);  // [out_w*s]
    auto ys = y0.unsqueeze(1) + fy.unsqueeze(0) * (rh / out_h).unsqueeze(1);    // [K, out_h*s]
    auto xs = x0.unsqueeze(1) + fx.unsqueeze(0) * (rw / out_w).unsqueeze(1);    // [K, out_w*s]
    // Bilinear interpolation as torchvision: zero outside [-1, size], clamp to the border.
    auto vy = (ys >= -1.0).logical_and(ys <= static_cast<double>(height)).to(torch::kFloat);
    auto vx = (xs >= -1.0).logical_and(xs <= static_cast<double>(width)).to(torch::kFloat);
    auto yc = ys.clamp(0, height - 1), xc = xs.clamp(0, width - 1);
    auto y_lo = yc.floor(), x_lo = xc.floor();
    auto ly = (yc - y_lo) * vy, lx = (xc - x_lo) * vx;  // weights of the high corner
    auto hy = vy - ly, hx = vx - lx;                    // weights of the low corner
    auto y_hi = (y_lo + 1).clamp_max(height - 1), x_hi = (x_lo + 1).clamp_max(width - 1);
    auto base = (r.select(1, 0) * static_cast<double>(height * width)).unsqueeze(1);  // [K, 1]
    // Leading dims (sample y, sample x) and trailing (K, bin y, bin x), so that one sum over the
    // leading dim of contiguous [J, N, C] rows does both the bilinear blend and the bin average.
    auto rows = [&](const torch::Tensor& y) {  // [K, out_h*s] -> [s, 1, K, out_h, 1]
      return (base + y * width).view({k, out_h, s}).permute({2, 0, 1}).reshape({s, 1, k, out_h, 1});
    };
    auto cols = [&](const torch::Tensor& x) {  // [K, out_w*s] -> [1, s, K, 1, out_w]
      return x.view({k, out_w, s}).permute({2, 0, 1}).reshape({1, s, k, 1, out_w});
    };
    auto wrows = [&](const torch::Tensor& w) {
      return w.view({k, out_h, s}).permute({2, 0, 1}).reshape({s, 1, k, out_h, 1});
    };
    auto wcols = [&](const torch::Tensor& w) {
      return w.view({k, out_w, s}).permute({2, 0, 1}).reshape({1, s, k, 1, out_w});
    };
    const int64_t n = k * out_h * out_w;
    idx = torch::stack({(rows(y_lo) + cols(x_lo)).reshape({-1, n}),
                        (rows(y_lo) + cols(x_hi)).reshape({-1, n}),
                        (rows(y_hi) + cols(x_lo)).reshape({-1, n}),
                        (rows(y_hi) + cols(x_hi)).reshape({-1, n})})
              .to(torch::kLong);  // [4, s*s, N]
    const double inv = 1.0 / static_cast<double>(s * s);
    weights =
        torch::stack(
            {(wrows(hy) * wcols(hx)).reshape({-1, n}), (wrows(hy) * wcols(lx)).reshape({-1, n}),
             (wrows(ly) * wcols(hx)).reshape({-1, n}), (wrows(ly) * wcols(lx)).reshape({-1, n})})
            .mul(inv)
            .to(features.dtype());  // [4, s*s, N]
  }
  // Channels-last rows [B*H*W, C], so each gathered corner (and, backward, each index_add)
  // moves one contiguous C-vector.
  auto flat = features.permute({0, 2, 3, 1}).reshape({-1, channels});
  const int64_t taps = 4 * s * s;
  auto corners = flat.index_select(0, idx.reshape({-1})).view({taps, -1, channels});  // [J, N, C]
  auto pooled = (corners * weights.view({taps, -1, 1})).sum(0);                       // [N, C]
  return scope.output(
      pooled.view({k, out_h, out_w, channels}).permute({0, 3, 1, 2}).contiguous());  // [K,C,oh,ow]
}

torch::Tensor clip_boxes(const torch::Tensor& boxes, int64_t height, int64_t width,
                         const std::string& layer) {
  LayerScope scope(layer);
  auto x = boxes.index({Slice(), Slice(0, None, 2)}).clamp(0, width);   // [N, 2]
  auto y = boxes.index({Slice(), Slice(1, None, 2)}).clamp(0, height);  // [N, 2]
  return scope.output(torch::stack({x, y}, 2).reshape(boxes.sizes()));
}

torch::Tensor remove_small_boxes(const torch::Tensor& boxes, double min_size,
                                 const std::string& layer) {
  LayerScope scope(layer);
  auto ws = boxes.select(1, 2) - boxes.select(1, 0);
  auto hs = boxes.select(1, 3) - boxes.select(1, 1);
  return scope.output((ws >= min_size).logical_and(hs >= min_size).nonzero().squeeze(1));
}

torch::Tensor smooth_l1_sum(const torch::Tensor& input, const torch::Tensor& target, double beta) {
  auto d = (input - target).abs();
  if (beta <= 0) return d.sum();
  return torch::where(d < beta, d * d * (0.5 / beta), d - 0.5 * beta).sum();
}

}  // namespace plumb::workloads::det
