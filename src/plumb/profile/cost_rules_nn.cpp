// Cost rules for normalisation, pooling and loss operators.
//
// FLOPs (n = input elements; per-channel/per-row work such as invstd and running-stat
// updates is O(C) against O(n) and ignored):
//   batch norm, training  6/element: mean 1 (add); variance 3 (sub, square, add); apply 2
//                         (x * scale + shift: the affine weight/bias fold into the
//                         per-channel scale and shift, as ATen's CPU kernel does)
//   batch norm, eval      2/element (x * scale + shift from running stats)
//   batch norm backward   per element: sum(g) 1 when grad_bias or training grad_input is
//                         wanted; sum(g*(x-mean)) 3 when grad_weight or training grad_input;
//                         grad_input 5 in training (g - mean_g - xhat*k, * scale), 1 in eval
//                         (g * scale). All three outputs, training: 9/element.
//   layer/group norm      6/element (mean 1, variance 3, normalise 2) + 1 per affine tensor
//   layer/group norm backward   xhat 2 (when grad_input or grad_weight), grad_weight 2,
//                         grad_bias 1, grad_input 7 (+1 with weight); all with weight: 13
//   max pool              one comparison per window element per output: o * prod(kernel)
//   avg pool              o * (prod(kernel) adds + 1 division)
//   adaptive avg pool     exact sum of the (possibly overlapping) window sizes + o divisions;
//                         adaptive max pool: the window sizes (comparisons)
//   pool backward         max: one add per grad_output element; avg/adaptive avg: as forward
//   nll_loss              N (one accumulate of the picked log-probability per target)
//                         + N with class weights + 1 division for reduction=mean.
//                         Reads only the N picked elements of the [N, C] input.
//   nll_loss_backward     N * (1 + weighted + mean division); writes the full [N, C] grad
//   cross_entropy_loss    log_softmax (5/element) + nll_loss; probability targets: + 2/element
//   binary_cross_entropy_with_logits   7/element ((1-t)*x + log1p(exp(-|x|)) + max(-x, 0)
//                         form) + 1 with weight + 2 with pos_weight + 1 reduce; backward 3
//                         (sigmoid(x) - t, * g) + weight 1 + pos_weight 2 + mean 1
//   binary_cross_entropy  7/element + weight 1 + reduce 1; backward 6 + weight 1 + mean 1
//   mse_loss              2/element (sub, square) + 1 reduce; backward 3 + mean 1
//   ctc_loss              alpha recursion: 10 FLOPs per (time step, extended-label position)
//                         cell (log-sum-exp of up to 3 predecessors + emission): per sample
//                         T_b * (2 L_b + 1) cells - O(T*S). Backward: the beta recursion
//                         (10/cell) + alpha-beta combination (4/cell) + 5 per log_probs
//                         element (exp, subtract, normalise). Tensor-valued lengths are not
//                         recorded: then every sample counts as max T and max L (upper bound).
#include <algorithm>
#include <cmath>

#include "plumb/profile/cost_rules.h"

namespace plumb::profile::cost {

namespace {

int64_t channels_of(const TensorMeta& t) {
  return t.shape.size() >= 2 ? t.shape[1] : (t.shape.empty() ? 1 : t.shape[0]);
}

// Element size of per-channel statistics: the running stats' dtype when present (fp32
// statistics with fp16/bf16 activations), else the weight's, else the input's.
double stat_size(const TensorMeta& input, const TensorMeta* stats, const TensorMeta* weight) {
  if (stats != nullptr) return element_size(stats->dtype);
  if (weight != nullptr) return element_size(weight->dtype);
  return element_size(input.dtype);
}

// Batch norm forward. Positions: input 0, weight 1, bias 2; running stats at `rm`/`rm + 1`
// (-1: none); `training` is a bool position, or -1 with `fixed_training`.
OpCost batch_norm(const OpCall& call, int rm, int training_index, bool fixed_training) {
  const TensorMeta* x = call.input_tensor(0);
  if (x == nullptr) return {};
  const TensorMeta* w = call.input_tensor(1);
  const TensorMeta* mean = rm >= 0 ? call.input_tensor(static_cast<size_t>(rm)) : nullptr;
  const TensorMeta* var = rm >= 0 ? call.input_tensor(static_cast<size_t>(rm + 1)) : nullptr;
  const bool training = training_index >= 0
                            ? flag_at(call, static_cast<size_t>(training_index), true)
                            : fixed_training;
  const double n = numel(x->shape);
  const double c = static_cast<double>(channels_of(*x));
  const double ss = stat_size(*x, mean, w);
  const double out = n * element_size(x->dtype);
  // Training writes save_mean and save_invstd; eval returns empty ones.
  double written = written_bytes(call, out + (training ? 2 * c * ss : 0));
  // Running statistics are updated in place (not among the outputs).
  if (training) written += bytes_of(mean) + bytes_of(var);
  // Tensors read: input, weight, bias and the running statistics when the schema has them.
  const size_t arity = rm >= 0 ? static_cast<size_t>(rm) + 2 : 3;
  return make_cost((training ? 6 : 2) * n, all_input_bytes(call, arity), written);
}

// Positions of a batch norm backward schema; train -1 means always training; mask -1 means
// no output_mask argument; arity as in cost_rules.h.
struct BnBackward {
  int grad, input, weight, train, mask;
  size_t arity;
};

OpCost batch_norm_backward(const OpCall& call, const BnBackward& s) {
  const TensorMeta* g = call.input_tensor(static_cast<size_t>(s.grad));
  const TensorMeta* x = call.input_tensor(static_cast<size_t>(s.input));
  if (g == nullptr || x == nullptr) return {};
  const TensorMeta* w = call.input_tensor(static_cast<size_t>(s.weight));
  const bool train = s.train < 0 || flag_at(call, static_cast<size_t>(s.train), true);
  const std::vector<bool> mask =
      output_mask(call, s.mask >= 0 ? static_cast<size_t>(s.mask) : call.inputs.size());
  const bool need_sum = mask[2] || (train && mask[0]);
  const bool need_dot = mask[1] || (train && mask[0]);
  const double per = (need_sum ? 1 : 0) + (need_dot ? 3 : 0) + (mask[0] ? (train ? 5 : 1) : 0);
  const double n = numel(x->shape);
  // Everything is read except the input when no statistic of it is needed.
  const double read = all_input_bytes(call, s.arity) - (need_dot ? 0 : bytes_of(x));
  const double c = static_cast<double>(channels_of(*x));
  const double ws = w != nullptr ? element_size(w->dtype) : element_size(x->dtype);
  const double computed =
      (mask[0] ? n * element_size(x->dtype) : 0) + (mask[1] ? c * ws : 0) + (mask[2] ? c * ws : 0);
  return make_cost(per * n, read, written_bytes(call, computed, s.arity));
}

// native_layer_norm(input, normalized_shape, weight?, bias?, eps) -> (out, mean, rstd) and
// native_group_norm(input, weight?, bias?, N, C, HxW, group, eps) -> (out, mean, rstd).
OpCost norm_forward(const OpCall& call, bool group) {
  const TensorMeta* x = call.input_tensor(0);
  if (x == nullptr) return {};
  const TensorMeta* w = call.input_tensor(group ? 1 : 2);
  const TensorMeta* b = call.input_tensor(group ? 2 : 3);
  const double n = numel(x->shape);
  double rows = 1;  // statistics computed: layer norm one per row, group norm N * groups
  if (group) {
    rows = scalar_at(call, 3).value_or(1) * scalar_at(call, 6).value_or(1);
  } else {
    const double inner = numel(call.input_ints(1));
    rows = inner > 0 ? n / inner : 1;
  }
  const double es = element_size(x->dtype);
  const double per = 6 + (w != nullptr ? 1 : 0) + (b != nullptr ? 1 : 0);
  const size_t arity = group ? 3 : 4;
  return make_cost(per * n, all_input_bytes(call, arity),
                   written_bytes(call, n * es + 2 * rows * es, arity));
}

// native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight?, bias?,
// output_mask) / native_group_norm_backward(grad_out, input, mean, rstd, weight?, N, C, HxW,
// group, output_mask).
OpCost norm_backward(const OpCall& call, bool group) {
  const TensorMeta* g = call.input_tensor(0);
  const TensorMeta* x = call.input_tensor(1);
  if (g == nullptr || x == nullptr) return {};
  const TensorMeta* mean = call.input_tensor(group ? 2 : 3);
  const TensorMeta* rstd = call.input_tensor(group ? 3 : 4);
  const TensorMeta* w = call.input_tensor(group ? 4 : 5);
  const std::vector<bool> mask = output_mask(call, group ? 9 : 7);
  const double n = numel(x->shape);
  const double per = ((mask[0] || mask[1]) ? 2 : 0) + (mask[1] ? 2 : 0) + (mask[2] ? 1 : 0) +
                     (mask[0] ? 7 + (w != nullptr ? 1 : 0) : 0);
  const double read = bytes_of(g) + ((mask[0] || mask[1]) ? bytes_of(x) : 0) + bytes_of(mean) +
                      bytes_of(rstd) + (mask[0] ? bytes_of(w) : 0);
  // grad_weight and grad_bias have the weight's shape (group norm: C); without a weight they
  // are not produced.
  const double wbytes = w != nullptr ? bytes_of(w) : 0;
  const double computed =
      (mask[0] ? n * element_size(x->dtype) : 0) + (mask[1] ? wbytes : 0) + (mask[2] ? wbytes : 0);
  return make_cost(per * n, read, written_bytes(call, computed));
}

// ---- Pooling ----

// Leading (non-spatial) dims and spatial dims of a pooling input with `k` spatial dims.
double leading_elements(const Shape& s, size_t k) {
  return s.size() > k ? numel(Shape(s.begin(), s.end() - static_cast<int64_t>(k))) : 1.0;
}

Shape spatial_of(const Shape& s, size_t k) {
  return s.size() >= k ? Shape(s.end() - static_cast<int64_t>(k), s.end()) : s;
}

// Output size of a sliding-window pool (ATen's pooling_output_shape, ceil_mode included).
int64_t pool_out(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dil, bool ceil) {
  stride = std::max<int64_t>(stride, 1);
  const int64_t span = in + 2 * pad - dil * (k - 1) - 1 + (ceil ? stride - 1 : 0);
  int64_t out = span / stride + 1;
  if (ceil && (out - 1) * stride >= in + pad) --out;
  return out;
}

// max_poolNd(_with_indices)(self, kernel, stride, padding, dilation, ceil_mode) and
// avg_poolNd(self, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override).
OpCost window_pool(const OpCall& call, size_t dims, bool max, bool indices) {
  const TensorMeta* x = call.input_tensor(0);
  if (x == nullptr) return {};
  const Shape kernel = expand_param(call.input_ints(1), dims, Shape(dims, 1));
  const Shape stride = expand_param(call.input_ints(2), dims, kernel);
  const Shape pad = expand_param(call.input_ints(3), dims, Shape(dims, 0));
  const Shape dil = max ? expand_param(call.input_ints(4), dims, Shape(dims, 1)) : Shape(dims, 1);
  const bool ceil = flag_at(call, max ? 5 : 4, false);
  const Shape in = spatial_of(x->shape, dims);
  Shape out(dims, 1);
  for (size_t i = 0; i < dims && i < in.size(); ++i)
    out[i] = pool_out(in[i], kernel[i], pad[i], stride[i], dil[i], ceil);
  double o = leading_elements(x->shape, dims) * numel(out);
  if (const TensorMeta* rec = recorded_output(call)) o = numel(rec->shape);
  const double k = numel(kernel);
  const double computed =
      o * element_size(x->dtype) + (indices ? o * element_size(c10::ScalarType::Long) : 0);
  return make_cost(max ? o * k : o * (k + 1), bytes_of(x), written_bytes(call, computed));
}

// Sum over output positions of the adaptive window length along one dim.
double adaptive_windows(int64_t in, int64_t out) {
  if (out <= 0) return 0;
  double total = 0;
  for (int64_t i = 0; i < out; ++i) {
    const int64_t start = (i * in) / out;
    const int64_t end = ((i + 1) * in + out - 1) / out;
    total += static_cast<double>(end - start);
  }
  return total;
}

// adaptive_{avg,max}_poolNd(self, output_size): windows from the input and output sizes.
double adaptive_work(const Shape& input, const Shape& output_size, size_t dims) {
  const Shape in = spatial_of(input, dims);
  const Shape out = expand_param(output_size, dims, in);
  double windows = 1;
  for (size_t i = 0; i < dims && i < in.size(); ++i) windows *= adaptive_windows(in[i], out[i]);
  return leading_elements(input, dims) * windows;
}

OpCost adaptive_pool(const OpCall& call, size_t dims, bool max) {
  const TensorMeta* x = call.input_tensor(0);
  if (x == nullptr) return {};
  const Shape out_size = expand_param(call.input_ints(1), dims, spatial_of(x->shape, dims));
  const double o = leading_elements(x->shape, dims) * numel(out_size);
  const double work = adaptive_work(x->shape, out_size, dims);
  const double computed =
      o * element_size(x->dtype) + (max ? o * element_size(c10::ScalarType::Long) : 0);
  return make_cost(max ? work : work + o, bytes_of(x), written_bytes(call, computed));
}

// Pool backward: reads grad_output (+ indices for max), writes a grad of self's size.
// `per_grad` FLOPs per grad_output element.
OpCost pool_backward(const OpCall& call, double per_grad, int indices_index) {
  const TensorMeta* g = call.input_tensor(0);
  const TensorMeta* self = call.input_tensor(1);
  if (g == nullptr || self == nullptr) return {};
  const double read =
      bytes_of(g) +
      (indices_index >= 0 ? bytes_of(call.input_tensor(static_cast<size_t>(indices_index))) : 0);
  return make_cost(per_grad * numel(g->shape), read,
                   written_bytes(call, numel(self->shape) * element_size(g->dtype)));
}

OpCost avg_pool_backward(const OpCall& call, size_t dims) {
  // avg_poolNd_backward(grad_output, self, kernel_size, ...)
  const double k = numel(expand_param(call.input_ints(2), dims, Shape(dims, 1)));
  return pool_backward(call, k + 1, -1);
}

OpCost adaptive_avg_backward(const OpCall& call, size_t dims) {
  const TensorMeta* g = call.input_tensor(0);
  const TensorMeta* self = call.input_tensor(1);
  if (g == nullptr || self == nullptr) return {};
  const Shape out_size = spatial_of(g->shape, dims);
  const double work = adaptive_work(self->shape, out_size, dims) + numel(g->shape);
  return make_cost(work, bytes_of(g),
                   written_bytes(call, numel(self->shape) * element_size(g->dtype)));
}

// ---- Losses ----

// nll_loss(self [N, C] or [C] or [N, C, d...], target [N] or [N, d...], weight?, reduction,
// ignore_index) and the *_forward variants (which also return total_weight).
OpCost nll_loss(const OpCall& call) {
  const TensorMeta* x = call.input_tensor(0);
  const TensorMeta* target = call.input_tensor(1);
  if (x == nullptr || target == nullptr) return {};
  const TensorMeta* w = call.input_tensor(2);
  const LossReduction red = reduction_at(call, 3);
  const double n = numel(target->shape);
  const double es = element_size(x->dtype);
  const double flops = n * (w != nullptr ? 2 : 1) + (red == LossReduction::kMean ? 1 : 0);
  const double read = bytes_of(target) + n * es + bytes_of(w);
  const bool has_total =
      call.name.size() > 8 && call.name.compare(call.name.size() - 8, 8, "_forward") == 0;
  const double computed = (red == LossReduction::kNone ? n : 1) * es + (has_total ? es : 0);
  return make_cost(flops, read, written_bytes(call, computed));
}

// nll_loss_backward(grad_output, self, target, weight?, reduction, ignore_index, total_weight)
OpCost nll_loss_backward(const OpCall& call) {
  const TensorMeta* g = call.input_tensor(0);
  const TensorMeta* x = call.input_tensor(1);
  const TensorMeta* target = call.input_tensor(2);
  if (g == nullptr || x == nullptr || target == nullptr) return {};
  const TensorMeta* w = call.input_tensor(3);
  const double n = numel(target->shape);
  const double per =
      1 + (w != nullptr ? 1 : 0) + (reduction_at(call, 4) == LossReduction::kMean ? 1 : 0);
  // self is passed for its shape only: the kernel zero-fills a grad and scatters N values.
  const double read = all_input_bytes(call, 7) - bytes_of(x);
  return make_cost(per * n, read, written_bytes(call, numel(x->shape) * element_size(x->dtype), 7));
}

// cross_entropy_loss(self, target, weight?, reduction, ignore_index, label_smoothing).
OpCost cross_entropy(const OpCall& call) {
  const TensorMeta* x = call.input_tensor(0);
  const TensorMeta* target = call.input_tensor(1);
  if (x == nullptr || target == nullptr) return {};
  const LossReduction red = reduction_at(call, 3);
  const double n = numel(x->shape);
  const bool probabilities = is_floating(target->dtype);
  const double rows =
      probabilities ? numel(target->shape) / std::max(static_cast<double>(channels_of(*x)), 1.0)
                    : numel(target->shape);
  double flops = 5 * n + (probabilities ? 2 * n : rows * (call.input_tensor(2) != nullptr ? 2 : 1));
  if (scalar_at(call, 5).value_or(0.0) != 0) flops += 2 * n;  // label smoothing
  if (red == LossReduction::kMean) flops += 1;
  const double computed = (red == LossReduction::kNone ? rows : 1) * element_size(x->dtype);
  return make_cost(flops, all_input_bytes(call, 3), written_bytes(call, computed, 3));
}

// Pointwise losses: `per` FLOPs per input element, `reduction_index` where reduction sits
// (every tensor argument comes before it); backward variants write a grad of self's size
// (self at `self_index`).
OpCost pointwise_loss(const OpCall& call, size_t self_index, double per, size_t reduction_index,
                      bool backward) {
  const TensorMeta* x = call.input_tensor(self_index);
  if (x == nullptr) return {};
  const LossReduction red = reduction_at(call, reduction_index);
  const double n = numel(x->shape);
  const double es = element_size(x->dtype);
  double flops = per * n;
  double computed = n * es;
  if (backward) {
    if (red == LossReduction::kMean) flops += n;
  } else {
    if (red != LossReduction::kNone) flops += n + (red == LossReduction::kMean ? 1 : 0);
    if (red != LossReduction::kNone) computed = es;
  }
  return make_cost(flops, all_input_bytes(call, reduction_index),
                   written_bytes(call, computed, reduction_index));
}

// binary_cross_entropy_with_logits(self, target, weight?, pos_weight?, reduction); the
// backward has grad first.
OpCost bce_logits(const OpCall& call, bool backward) {
  const size_t o = backward ? 1 : 0;
  const double per = (backward ? 3 : 7) + (call.input_tensor(o + 2) != nullptr ? 1 : 0) +
                     (call.input_tensor(o + 3) != nullptr ? 2 : 0);
  return pointwise_loss(call, o, per, o + 4, backward);
}

// _ctc_loss(log_probs [T, N, C], targets, input_lengths, target_lengths, blank, zero_inf)
// -> (neg_log_likelihood [N], log_alpha [N, T, 2*Lmax+1]); ctc_loss has reduction after
// blank; _ctc_loss_backward(grad, log_probs, targets, input_lengths, target_lengths, nll,
// log_alpha, blank, zero_infinity).
OpCost ctc(const OpCall& call, bool backward) {
  const size_t o = backward ? 1 : 0;
  const TensorMeta* lp = call.input_tensor(o);
  const TensorMeta* targets = call.input_tensor(o + 1);
  if (lp == nullptr || targets == nullptr || lp->shape.size() < 2) return {};
  const bool batched = lp->shape.size() == 3;
  const double t_max = static_cast<double>(lp->shape[0]);
  const double batch = batched ? static_cast<double>(lp->shape[1]) : 1.0;
  const std::vector<int64_t> in_len = call.input_ints(o + 2);
  const std::vector<int64_t> tgt_len = call.input_ints(o + 3);
  double l_max = 0;
  if (targets->shape.size() == 2) {
    l_max = static_cast<double>(targets->shape[1]);
  } else if (!targets->shape.empty()) {
    l_max = static_cast<double>(targets->shape[0]) / batch;  // concatenated targets
  }
  double cells = 0;
  for (int64_t b = 0; b < static_cast<int64_t>(batch); ++b) {
    const auto bi = static_cast<size_t>(b);
    const double t = bi < in_len.size() ? static_cast<double>(in_len[bi]) : t_max;
    const double l = bi < tgt_len.size() ? static_cast<double>(tgt_len[bi]) : l_max;
    cells += t * (2 * l + 1);
  }
  const double es = element_size(lp->dtype);
  if (backward) {
    return make_cost(14 * cells + 5 * numel(lp->shape), all_input_bytes(call, 7),
                     written_bytes(call, numel(lp->shape) * es, 7));
  }
  double l_out = l_max;
  for (int64_t l : tgt_len) l_out = std::max(l_out, static_cast<double>(l));
  const double computed = batch * es + batch * t_max * (2 * l_out + 1) * es;
  return make_cost(10 * cells, all_input_bytes(call, 4), written_bytes(call, computed, 4));
}

}  // namespace

void add_nn_rules(CostTable& t) {
  add_rule(t,
           {"native_batch_norm", "batch_norm", "_batch_norm_impl_index", "cudnn_batch_norm",
            "miopen_batch_norm"},
           [](const OpCall& c) { return batch_norm(c, 3, 5, true); });
  add_rule(t, {"_native_batch_norm_legit"}, [](const OpCall& c) {
    // The .no_stats overload has no running statistics: training sits at 3.
    if (is_kind(c, 3, ArgMeta::Kind::kBool)) return batch_norm(c, -1, 3, true);
    return batch_norm(c, 3, 5, true);
  });
  add_rule(t, {"_batch_norm_with_update"},
           [](const OpCall& c) { return batch_norm(c, 3, -1, true); });
  add_rule(t, {"_native_batch_norm_legit_no_training", "_batch_norm_no_update"},
           [](const OpCall& c) { return batch_norm(c, 3, -1, false); });
  // grad, input, weight, train, output_mask
  auto bn_bwd = [](BnBackward s) {
    return [s](const OpCall& c) { return batch_norm_backward(c, s); };
  };
  add_rule(t, {"native_batch_norm_backward"}, bn_bwd({0, 1, 2, 7, 9, 7}));
  // batch_norm_backward(..., update, eps, output_mask, reserve): the reserve tensor at 10.
  add_rule(t, {"batch_norm_backward"}, bn_bwd({0, 1, 2, 7, 9, 11}));
  add_rule(t, {"_batch_norm_impl_index_backward"}, bn_bwd({2, 1, 3, 8, 10, 12}));
  add_rule(t, {"cudnn_batch_norm_backward", "miopen_batch_norm_backward"},
           bn_bwd({1, 0, 2, -1, -1, 9}));
  add_rule(t, {"native_layer_norm", "layer_norm"},
           [](const OpCall& c) { return norm_forward(c, false); });
  add_rule(t, {"native_group_norm"}, [](const OpCall& c) { return norm_forward(c, true); });
  add_rule(t, {"native_layer_norm_backward"},
           [](const OpCall& c) { return norm_backward(c, false); });
  add_rule(t, {"native_group_norm_backward"},
           [](const OpCall& c) { return norm_backward(c, true); });

  add_rule(t, {"max_pool2d_with_indices"},
           [](const OpCall& c) { return window_pool(c, 2, true, true); });
  add_rule(t, {"adaptive_max_pool2d"}, [](const OpCall& c) { return adaptive_pool(c, 2, true); });
  add_rule(t, {"adaptive_max_pool3d"}, [](const OpCall& c) { return adaptive_pool(c, 3, true); });
  add_rule(t, {"max_pool3d_with_indices"},
           [](const OpCall& c) { return window_pool(c, 3, true, true); });
  add_rule(t, {"max_pool1d"}, [](const OpCall& c) { return window_pool(c, 1, true, false); });
  add_rule(t, {"max_pool2d", "mkldnn_max_pool2d", "quantized_max_pool2d"},
           [](const OpCall& c) { return window_pool(c, 2, true, false); });
  add_rule(t, {"max_pool3d", "mkldnn_max_pool3d"},
           [](const OpCall& c) { return window_pool(c, 3, true, false); });
  add_rule(t, {"avg_pool1d"}, [](const OpCall& c) { return window_pool(c, 1, false, false); });
  add_rule(t, {"avg_pool2d"}, [](const OpCall& c) { return window_pool(c, 2, false, false); });
  add_rule(t, {"avg_pool3d"}, [](const OpCall& c) { return window_pool(c, 3, false, false); });
  add_rule(t, {"max_pool2d_with_indices_backward", "max_pool3d_with_indices_backward"},
           [](const OpCall& c) { return pool_backward(c, 1, 7); });
  add_rule(t, {"adaptive_max_pool2d_backward", "adaptive_max_pool3d_backward"},
           [](const OpCall& c) { return pool_backward(c, 1, 2); });
  add_rule(t, {"avg_pool2d_backward"}, [](const OpCall& c) { return avg_pool_backward(c, 2); });
  add_rule(t, {"avg_pool3d_backward"}, [](const OpCall& c) { return avg_pool_backward(c, 3); });
  add_rule(t, {"adaptive_avg_pool1d"}, [](const OpCall& c) { return adaptive_pool(c, 1, false); });
  add_rule(t, {"adaptive_avg_pool2d", "_adaptive_avg_pool2d", "mkldnn_adaptive_avg_pool2d"},
           [](const OpCall& c) { return adaptive_pool(c, 2, false); });
  add_rule(t, {"adaptive_avg_pool3d", "_adaptive_avg_pool3d"},
           [](const OpCall& c) { return adaptive_pool(c, 3, false); });
  add_rule(t, {"_adaptive_avg_pool2d_backward", "mkldnn_adaptive_avg_pool2d_backward"},
           [](const OpCall& c) { return adaptive_avg_backward(c, 2); });
  add_rule(t, {"_adaptive_avg_pool3d_backward", "adaptive_avg_pool3d_backward"},
           [](const OpCall& c) { return adaptive_avg_backward(c, 3); });

  add_rule(t, {"nll_loss", "nll_loss_forward", "nll_loss_nd", "nll_loss2d", "nll_loss2d_forward"},
           nll_loss);
  add_rule(t, {"nll_loss_backward", "nll_loss2d_backward"}, nll_loss_backward);
  add_rule(t, {"cross_entropy_loss"}, cross_entropy);
  add_rule(t, {"binary_cross_entropy_with_logits"},
           [](const OpCall& c) { return bce_logits(c, false); });
  add_rule(t, {"binary_cross_entropy_with_logits_backward"},
           [](const OpCall& c) { return bce_logits(c, true); });
  add_rule(t, {"binary_cross_entropy"}, [](const OpCall& c) {
    return pointwise_loss(c, 0, 7 + (c.input_tensor(2) != nullptr ? 1 : 0), 3, false);
  });
  add_rule(t, {"binary_cross_entropy_backward"}, [](const OpCall& c) {
    return pointwise_loss(c, 1, 6 + (c.input_tensor(3) != nullptr ? 1 : 0), 4, true);
  });
  add_rule(t, {"mse_loss"}, [](const OpCall& c) { return pointwise_loss(c, 0, 2, 2, false); });
  add_rule(t, {"mse_loss_backward"},
           [](const OpCall& c) { return pointwise_loss(c, 1, 3, 3, true); });
  add_rule(t, {"_ctc_loss", "ctc_loss"}, [](const OpCall& c) { return ctc(c, false); });
  add_rule(t, {"_ctc_loss_backward"}, [](const OpCall& c) { return ctc(c, true); });
}

}  // namespace plumb::profile::cost
