// Cost rules for GEMM-like operators: the convolution family (forward and backward, grouped,
// depthwise, transposed, 1-3-D), matrix products, and fused recurrent cells.
//
// A multiply-accumulate (MAC) is 2 FLOPs. Conventions:
//   conv            MACs = N * C_out * prod(out spatial) * (C_in/groups) * prod(kernel)
//                        = N * prod(out spatial) * numel(weight)
//   transposed conv MACs = N * C_in * prod(in spatial) * (C_out/groups) * prod(kernel)
//                        = N * prod(in spatial) * numel(weight)
//                   FLOPs = 2 MACs + one add per output element when a bias is given
//   conv backward   grad_input and grad_weight each cost the forward MACs; grad_bias costs
//                   one add per grad_output element. Reads grad_output, plus input only for
//                   grad_weight and weight only for grad_input (what the kernels use).
//   mm/bmm/matmul/linear/mv/dot  MACs = batch * M * N * K
//   addmm/addmv/baddbmm/addbmm/linear+bias  + one add per output element for the bias,
//                   + one multiply per output element for beta not in {0, 1} and for alpha != 1
//   lstm_cell       gate GEMMs (4H x (I + H) per row) + pointwise 13 per (row, hidden unit):
//                   gates sum 4, activations 4 (sigmoid x3, tanh), c' = f*c + i*g 3,
//                   h' = o*tanh(c') 2; + 4 per bias vector given
//   gru_cell        GEMMs 3H x (I + H) per row + pointwise 10: r,z sums 2, r,z sigmoid 2,
//                   n = tanh(i_n + r*h_n) 3, h' = n + z*(h - n) 3; + 3 per bias vector
//   GEMM shapes (OpCost::gemms): a convolution as im2col, per group: forward M = output pixels
//                   (batch x spatial), N = output channels, K = input channels x kernel;
//                   grad_input swaps N and K, grad_weight is channels x (channels x kernel)
//                   over the pixels; transposed convolutions mirror these over input pixels
//   scaled_dot_product_attention (and the CPU flash kernel it calls): query [.., L, E], key
//                   [.., S, E], value [.., S, Ev]: MACs = batch * L * S * (E + Ev) over the
//                   query's batch dims (grouped-query keys are shared, not repeated), + 5 FLOPs
//                   per score (scale, mask, softmax's max, exp and sum; the normalisation is
//                   per output row); every score is counted, causal or not (as
//                   core/transformer_shape.h counts). Reads query, key, value (the KV cache a
//                   decode attends) and a mask; writes the output
//   _thnn_fused_*_cell   the pointwise part only (the GEMMs ran as separate mm/addmm ops);
//                   backward: LSTM 24 per (row, unit), GRU 20, + 1 per gate element for bias
//                   grads (the derivative chains of the forward formulas above).
#include <algorithm>

#include "plumb/profile/cost_rules.h"

namespace plumb::profile::cost {

namespace {

// Everything a convolution's cost depends on, whatever the schema's argument order.
struct ConvArgs {
  const TensorMeta* input = nullptr;
  const TensorMeta* weight = nullptr;
  const TensorMeta* bias = nullptr;
  std::vector<int64_t> stride, padding, dilation, output_padding;
  bool transposed = false;
  int64_t groups = 1;
  bool padding_known = true;  // false for string padding ("same"/"valid")
};

// Argument positions of one convolution schema; -1 when the schema lacks the argument.
struct ConvSchema {
  int bias, stride, padding, dilation, transposed, output_padding, groups;
  bool always_transposed;
};

ConvArgs read_conv(const OpCall& call, const ConvSchema& s) {
  ConvArgs a;
  a.input = call.input_tensor(0);
  a.weight = call.input_tensor(1);
  if (s.bias >= 0) a.bias = call.input_tensor(static_cast<size_t>(s.bias));
  auto ints = [&](int i) {
    return i >= 0 ? call.input_ints(static_cast<size_t>(i)) : std::vector<int64_t>{};
  };
  a.stride = ints(s.stride);
  a.padding = ints(s.padding);
  a.padding_known =
      s.padding < 0 || !is_kind(call, static_cast<size_t>(s.padding), ArgMeta::Kind::kOther);
  a.dilation = ints(s.dilation);
  a.output_padding = ints(s.output_padding);
  a.transposed = s.always_transposed ||
                 (s.transposed >= 0 && flag_at(call, static_cast<size_t>(s.transposed), false));
  if (s.groups >= 0) {
    auto g = ints(s.groups);
    if (!g.empty() && g[0] > 0) a.groups = g[0];
  }
  return a;
}

// Batch size, channels and spatial dims of a conv activation; unbatched inputs have one
// dim fewer than the weight.
struct Activation {
  double batch = 1;
  int64_t channels = 0;
  Shape spatial;
};

Activation split_activation(const TensorMeta& t, size_t weight_rank) {
  Activation a;
  const bool unbatched = t.shape.size() + 1 == weight_rank;
  const size_t c = unbatched ? 0 : 1;
  if (t.shape.size() <= c) return a;
  a.batch = unbatched ? 1.0 : static_cast<double>(t.shape[0]);
  a.channels = t.shape[c];
  a.spatial.assign(t.shape.begin() + static_cast<int64_t>(c) + 1, t.shape.end());
  return a;
}

// The im2col GEMMs of a convolution with `weight` ([narrow*groups, wide/kernel, kernel...];
// narrow = output channels per group, or input channels per group when transposed) over
// `pixels` rows. Forward and grad_input are the same product with N and K exchanged.
struct ConvGemm {
  int64_t groups, pixels, narrow, wide;
  bool transposed;
};

ConvGemm conv_gemm(const TensorMeta& weight, int64_t groups, double pixels, bool transposed) {
  const int64_t g = std::max<int64_t>(groups, 1);
  const int64_t rows = weight.shape[0];
  const int64_t wide = rows > 0 ? weight.numel() / rows : 0;
  return {g, static_cast<int64_t>(pixels), rows / g, wide, transposed};
}

OpGemm conv_gemm_forward(const ConvGemm& c) {
  return c.transposed ? OpGemm{{c.groups, c.pixels, c.wide, c.narrow}, "forward"}
                      : OpGemm{{c.groups, c.pixels, c.narrow, c.wide}, "forward"};
}
OpGemm conv_gemm_grad_input(const ConvGemm& c) {
  return c.transposed ? OpGemm{{c.groups, c.pixels, c.narrow, c.wide}, "grad_input"}
                      : OpGemm{{c.groups, c.pixels, c.wide, c.narrow}, "grad_input"};
}
OpGemm conv_gemm_grad_weight(const ConvGemm& c) {
  return {{c.groups, c.narrow, c.wide, c.pixels}, "grad_weight"};
}

// Output spatial size from the standard formulas, or nullopt when padding is unknown.
std::optional<Shape> conv_out_spatial(const ConvArgs& a, const Shape& in) {
  if (!a.padding_known) return std::nullopt;
  const size_t r = in.size();
  const Shape kernel(a.weight->shape.begin() + 2, a.weight->shape.end());
  const Shape stride = expand_param(a.stride, r, Shape(r, 1));
  const Shape pad = expand_param(a.padding, r, Shape(r, 0));
  const Shape dil = expand_param(a.dilation, r, Shape(r, 1));
  const Shape opad = expand_param(a.output_padding, r, Shape(r, 0));
  Shape out(r, 0);
  for (size_t i = 0; i < r && i < kernel.size(); ++i) {
    const int64_t span = dil[i] * (kernel[i] - 1);
    out[i] = a.transposed ? (in[i] - 1) * stride[i] - 2 * pad[i] + span + opad[i] + 1
                          : (in[i] + 2 * pad[i] - span - 1) / std::max<int64_t>(stride[i], 1) + 1;
  }
  return out;
}

OpCost conv_forward(const OpCall& call, const ConvSchema& schema) {
  const ConvArgs a = read_conv(call, schema);
  if (a.input == nullptr || a.weight == nullptr || a.weight->shape.size() < 3) return {};
  const Activation in = split_activation(*a.input, a.weight->shape.size());
  const int64_t c_out = a.transposed ? a.weight->shape[1] * a.groups : a.weight->shape[0];
  Shape out_spatial;
  if (const TensorMeta* out = recorded_output(call)) {
    out_spatial = split_activation(*out, a.weight->shape.size()).spatial;
  } else if (auto computed = conv_out_spatial(a, in.spatial)) {
    out_spatial = *computed;
  } else {
    return {};  // string padding and no recorded output: the output size is unknown
  }
  const double w = numel(a.weight->shape);
  const double macs = in.batch * w * numel(a.transposed ? in.spatial : out_spatial);
  const double out_elems = in.batch * static_cast<double>(c_out) * numel(out_spatial);
  const double flops = 2 * macs + (a.bias != nullptr ? out_elems : 0);
  const double read = bytes_of(a.input) + bytes_of(a.weight) + bytes_of(a.bias);
  OpCost cost =
      make_cost(flops, read, written_bytes(call, out_elems * element_size(a.input->dtype)), macs);
  const double pixels = in.batch * numel(a.transposed ? in.spatial : out_spatial);
  cost.gemms.push_back(conv_gemm_forward(conv_gemm(*a.weight, a.groups, pixels, a.transposed)));
  return cost;
}

// Argument positions of a convolution backward schema.
struct ConvBackwardSchema {
  int grad_output, input, weight, transposed, mask, groups;
  bool always_transposed;
};

OpCost conv_backward(const OpCall& call, const ConvBackwardSchema& s) {
  const TensorMeta* grad_out = call.input_tensor(static_cast<size_t>(s.grad_output));
  const TensorMeta* input = call.input_tensor(static_cast<size_t>(s.input));
  const TensorMeta* weight = call.input_tensor(static_cast<size_t>(s.weight));
  if (grad_out == nullptr || input == nullptr || weight == nullptr) return {};
  const bool transposed =
      s.always_transposed ||
      (s.transposed >= 0 && flag_at(call, static_cast<size_t>(s.transposed), false));
  const std::vector<bool> mask = s.mask >= 0 ? output_mask(call, static_cast<size_t>(s.mask))
                                             : std::vector<bool>{true, true, true};
  const size_t wr = weight->shape.size();
  const Activation in = split_activation(*input, wr);
  const Activation out = split_activation(*grad_out, wr);
  const double fwd_macs =
      in.batch * numel(weight->shape) * numel(transposed ? in.spatial : out.spatial);
  const double macs = fwd_macs * ((mask[0] ? 1 : 0) + (mask[1] ? 1 : 0));
  const double bias_adds = mask[2] ? numel(grad_out->shape) : 0;
  const double read =
      bytes_of(grad_out) + (mask[1] ? bytes_of(input) : 0) + (mask[0] ? bytes_of(weight) : 0);
  const double es = element_size(grad_out->dtype);
  const double computed = (mask[0] ? numel(input->shape) * es : 0) +
                          (mask[1] ? numel(weight->shape) * es : 0) +
                          (mask[2] ? static_cast<double>(out.channels) * es : 0);
  OpCost cost = make_cost(2 * macs + bias_adds, read, written_bytes(call, computed), macs);
  const auto groups =
      s.groups >= 0 ? call.input_ints(static_cast<size_t>(s.groups)) : std::vector<int64_t>{};
  if (wr >= 3) {
    const ConvGemm g =
        conv_gemm(*weight, groups.empty() ? 1 : groups[0],
                  in.batch * numel(transposed ? in.spatial : out.spatial), transposed);
    if (mask[0]) cost.gemms.push_back(conv_gemm_grad_input(g));
    if (mask[1]) cost.gemms.push_back(conv_gemm_grad_weight(g));
  }
  return cost;
}

// ---- Matrix products ----

struct GemmDims {
  double batch = 1, m = 1, n = 1, k = 1;
  Shape out;

  OpGemm gemm() const {
    const auto i = [](double v) { return static_cast<int64_t>(v); };
    return {{i(batch), i(m), i(n), i(k)}, "forward"};
  }
};

// torch.matmul semantics: 1-D operands gain and then lose a unit dim; batch dims broadcast.
GemmDims matmul_dims(const Shape& a, const Shape& b) {
  GemmDims g;
  if (a.empty() || b.empty()) return g;
  const bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  g.k = static_cast<double>(a.back());
  g.m = a_vec ? 1.0 : static_cast<double>(a[a.size() - 2]);
  g.n = b_vec ? 1.0 : static_cast<double>(b.back());
  TensorMeta ba, bb;
  if (a.size() > 2) ba.shape.assign(a.begin(), a.end() - 2);
  if (b.size() > 2) bb.shape.assign(b.begin(), b.end() - 2);
  g.out = broadcast({&ba, &bb});
  g.batch = numel(g.out);
  if (!a_vec) g.out.push_back(a[a.size() - 2]);
  if (!b_vec) g.out.push_back(b.back());
  return g;
}

// Extra per-output work of the add* forms: the bias add unless beta = 0, scaling by
// beta not in {0, 1} and by alpha != 1.
double bias_flops(const OpCall& call, size_t beta_i, size_t alpha_i, double out_elems) {
  const double beta = scalar_at(call, beta_i).value_or(1.0);
  const double alpha = scalar_at(call, alpha_i).value_or(1.0);
  double per = beta != 0 ? 1 : 0;
  if (beta != 0 && beta != 1) per += 1;
  if (alpha != 1) per += 1;
  return per * out_elems;
}

// addmm / addmv / baddbmm / addbmm: (self, a, b, beta, alpha).
OpCost add_gemm(const OpCall& call, bool batched_sum) {
  const TensorMeta* self = call.input_tensor(0);
  const TensorMeta* a = call.input_tensor(1);
  const TensorMeta* b = call.input_tensor(2);
  if (a == nullptr || b == nullptr) return {};
  GemmDims g = matmul_dims(a->shape, b->shape);
  if (batched_sum) g.out.erase(g.out.begin(), g.out.end() - 2);  // addbmm sums the batch
  const double macs = g.batch * g.m * g.n * g.k;
  const double out_elems = numel(g.out);
  const bool uses_self = scalar_at(call, 3).value_or(1.0) != 0;
  const double read = bytes_of(a) + bytes_of(b) + (uses_self ? bytes_of(self) : 0);
  OpCost cost = make_cost(2 * macs + bias_flops(call, 3, 4, out_elems), read,
                          written_bytes(call, out_elems * element_size(a->dtype)), macs);
  cost.gemms.push_back(g.gemm());
  return cost;
}

// mm / bmm / matmul / mv / dot: (self, other).
OpCost plain_gemm(const OpCall& call) {
  const TensorMeta* a = call.input_tensor(0);
  const TensorMeta* b = call.input_tensor(1);
  if (a == nullptr || b == nullptr) return {};
  const GemmDims g = matmul_dims(a->shape, b->shape);
  const double macs = g.batch * g.m * g.n * g.k;
  OpCost cost = make_cost(2 * macs, bytes_of(a) + bytes_of(b),
                          written_bytes(call, numel(g.out) * element_size(a->dtype)), macs);
  cost.gemms.push_back(g.gemm());
  return cost;
}

// linear(input [*, K], weight [N, K], bias [N]?).
OpCost linear(const OpCall& call) {
  const TensorMeta* x = call.input_tensor(0);
  const TensorMeta* w = call.input_tensor(1);
  const TensorMeta* b = call.input_tensor(2);
  if (x == nullptr || w == nullptr || x->shape.empty()) return {};
  const double rows = numel(Shape(x->shape.begin(), x->shape.end() - 1));
  const double k = static_cast<double>(x->shape.back());
  const double n = w->shape.size() == 2 ? static_cast<double>(w->shape[0]) : 1.0;
  const double macs = rows * n * k;
  const double out_elems = rows * n;
  OpCost cost =
      make_cost(2 * macs + (b != nullptr ? out_elems : 0), bytes_of(x) + bytes_of(w) + bytes_of(b),
                written_bytes(call, out_elems * element_size(x->dtype)), macs);
  cost.gemms.push_back(GemmDims{1, rows, n, k, {}}.gemm());
  return cost;
}

// scaled_dot_product_attention(query, key, value, attn_mask?, ...) and the CPU flash kernels
// it calls (LibTorch 2.x): `mask_at` is the mask's position, kNoMask for a kernel without one
// (no argument is there: input_tensor gives none).
constexpr size_t kNoMask = static_cast<size_t>(-1);
OpCost attention(const OpCall& call, size_t mask_at) {
  const TensorMeta* q = call.input_tensor(0);
  const TensorMeta* k = call.input_tensor(1);
  const TensorMeta* v = call.input_tensor(2);
  if (q == nullptr || k == nullptr || v == nullptr || q->shape.size() < 2 || k->shape.size() < 2 ||
      v->shape.empty())
    return {};
  const double batch = numel(Shape(q->shape.begin(), q->shape.end() - 2));
  const double l = static_cast<double>(q->shape[q->shape.size() - 2]);
  const double e = static_cast<double>(q->shape.back());
  const double s = static_cast<double>(k->shape[k->shape.size() - 2]);
  const double ev = static_cast<double>(v->shape.back());
  const double scores = batch * l * s;
  const double macs = scores * (e + ev);
  const double read =
      bytes_of(q) + bytes_of(k) + bytes_of(v) + bytes_of(call.input_tensor(mask_at));
  const double out_bytes = batch * l * ev * element_size(q->dtype);
  return make_cost(2 * macs + 5 * scores, read, written_bytes(call, out_bytes), macs);
}

// ---- Recurrent cells ----

// lstm_cell(input [B, I], hx [h, c], w_ih [G*H, I], w_hh [G*H, H], b_ih?, b_hh?) and
// gru_cell(input, hx [B, H], ...): `gates` = 4 (LSTM) or 3 (GRU).
OpCost rnn_cell(const OpCall& call, int gates, double pointwise_per_unit) {
  const TensorMeta* x = call.input_tensor(0);
  const TensorMeta* w_ih = call.input_tensor(2);
  const TensorMeta* w_hh = call.input_tensor(3);
  if (x == nullptr || w_ih == nullptr || w_hh == nullptr || w_hh->shape.size() != 2) return {};
  const double rows = x->shape.size() == 2 ? static_cast<double>(x->shape[0]) : 1.0;
  const double hidden = static_cast<double>(w_hh->shape[1]);
  const double macs = rows * (numel(w_ih->shape) + numel(w_hh->shape));
  double pointwise = pointwise_per_unit * rows * hidden;
  for (size_t i : {size_t{4}, size_t{5}})
    if (call.input_tensor(i) != nullptr) pointwise += gates * rows * hidden;
  // Outputs: LSTM (h', c'), GRU h', each [B, H] at the input's element size.
  const double state_bytes = rows * hidden * element_size(x->dtype);
  OpCost cost = make_cost(2 * macs + pointwise, all_input_bytes(call, 6),
                          written_bytes(call, (gates == 4 ? 2 : 1) * state_bytes), macs);
  // [B, I] x [I, G*H] and [B, H] x [H, G*H].
  for (const TensorMeta* w : {w_ih, w_hh})
    if (w->shape.size() == 2)
      cost.gemms.push_back(
          GemmDims{1, rows, static_cast<double>(w->shape[0]), static_cast<double>(w->shape[1]), {}}
              .gemm());
  return cost;
}

// _thnn_fused_lstm_cell(input_gates [B, 4H], hidden_gates, cx [B, H], input_bias?,
// hidden_bias?) -> (hy, cy, workspace [B, 4H]); the GRU variant -> (hy, workspace [B, 5H]).
OpCost fused_cell(const OpCall& call, int gates, double pointwise_per_unit) {
  const TensorMeta* ig = call.input_tensor(0);
  const TensorMeta* state = call.input_tensor(2);
  if (ig == nullptr || state == nullptr) return {};
  const double units = numel(state->shape);
  double flops = pointwise_per_unit * units;
  for (size_t i : {size_t{3}, size_t{4}})
    if (call.input_tensor(i) != nullptr) flops += gates * units;
  const double es = element_size(ig->dtype);
  const double computed = gates == 4 ? (2 + 4) * units * es : (1 + 5) * units * es;
  return make_cost(flops, all_input_bytes(call, 5), written_bytes(call, computed, 5));
}

// _thnn_fused_lstm_cell_backward(grad_hy?, grad_cy?, cx, cy, workspace, has_bias)
// -> (grad_gates [B, 4H], grad_gates, grad_cx, grad_bias, grad_bias), _impl -> (grad_gates,
// grad_cx, grad_bias);
// _thnn_fused_gru_cell_backward(grad_hy, workspace, has_bias)
// -> (grad_input_gates, grad_hidden_gates [B, 3H], grad_hx, grad_bias_ih, grad_bias_hh).
OpCost fused_cell_backward(const OpCall& call, bool lstm) {
  const TensorMeta* ref = lstm ? call.input_tensor(2) : call.input_tensor(0);
  if (ref == nullptr || ref->shape.size() != 2) return {};
  const double rows = static_cast<double>(ref->shape[0]);
  const double units = numel(ref->shape);
  const int gates = lstm ? 4 : 3;
  const bool has_bias = flag_at(call, lstm ? 5 : 2, false);
  const double flops = (lstm ? 24 : 20) * units + (has_bias ? gates * units : 0);
  const double es = element_size(ref->dtype);
  const double gate_bytes = gates * units * es;
  // LSTM: one grad_gates serves both GEMM inputs and one bias grad both biases (the
  // non-_impl wrapper returns them twice as aliases); GRU returns two of each.
  const double copies = lstm ? 1 : 2;
  const double computed = copies * gate_bytes + units * es +
                          (has_bias ? copies * gates * (units / std::max(rows, 1.0)) * es : 0);
  const size_t arity = lstm ? 5 : 2;
  return make_cost(flops, all_input_bytes(call, arity), written_bytes(call, computed, arity));
}

}  // namespace

void add_gemm_rules(CostTable& t) {
  // bias, stride, padding, dilation, transposed, output_padding, groups, always_transposed
  const ConvSchema convolution{2, 3, 4, 5, 6, 7, 8, false};
  const ConvSchema conv_nd{2, 3, 4, 5, -1, -1, 6, false};          // conv1d/2d/3d
  const ConvSchema conv_transpose_nd{2, 3, 4, 7, -1, 5, 6, true};  // conv_transposeNd
  const ConvSchema mkldnn{2, 4, 3, 5, -1, -1, 6, false};           // padding before stride
  const ConvSchema slow{3, 4, 5, -1, -1, -1, -1, false};           // (.., kernel_size, bias, ..)
  const ConvSchema slow_dilated{3, 4, 5, 6, -1, -1, -1, false};
  const ConvSchema slow_transpose{3, 4, 5, 7, -1, 6, -1, true};
  const ConvSchema cudnn{-1, 3, 2, 4, -1, -1, 5, false};
  const ConvSchema cudnn_transpose{-1, 4, 2, 5, -1, 3, 6, true};
  auto fwd = [](ConvSchema s) { return [s](const OpCall& c) { return conv_forward(c, s); }; };
  add_rule(t, {"convolution", "_convolution"}, fwd(convolution));
  add_rule(t, {"conv1d", "conv2d", "conv3d", "_convolution_mode"}, fwd(conv_nd));
  // int8 kernels: op_call.cpp describes the prepacked weight as conv2d's and linear's own
  // arguments (weight, bias, stride, padding, dilation, groups), so the same rules apply, at the
  // int8 element size of the quantized tensors.
  t["quantized::conv2d"] = fwd(conv_nd);
  t["quantized::conv2d_relu"] = fwd(conv_nd);
  add_rule(t, {"conv_transpose1d", "conv_transpose2d", "conv_transpose3d"}, fwd(conv_transpose_nd));
  add_rule(t, {"mkldnn_convolution"}, fwd(mkldnn));
  add_rule(t, {"_slow_conv2d_forward", "thnn_conv2d", "slow_conv3d", "slow_conv3d_forward"},
           fwd(slow));
  add_rule(t, {"slow_conv_dilated2d", "slow_conv_dilated3d"}, fwd(slow_dilated));
  add_rule(t, {"slow_conv_transpose2d", "slow_conv_transpose3d"}, fwd(slow_transpose));
  add_rule(t, {"cudnn_convolution"}, fwd(cudnn));
  add_rule(t, {"cudnn_convolution_transpose"}, fwd(cudnn_transpose));

  // grad_output, input, weight, transposed, output_mask, groups, always_transposed
  auto bwd = [](ConvBackwardSchema s) {
    return [s](const OpCall& c) { return conv_backward(c, s); };
  };
  add_rule(t, {"convolution_backward"}, bwd({0, 1, 2, 7, 10, 9, false}));
  add_rule(t, {"_slow_conv2d_backward"}, bwd({0, 1, 2, -1, 6, -1, false}));
  // mkldnn_convolution_backward(self, grad_output, weight, padding, stride, dilation, groups,
  // output_mask): the pre-1.11 schema, input first.
  add_rule(t, {"mkldnn_convolution_backward"}, bwd({1, 0, 2, -1, 7, 6, false}));

  add_rule(t, {"mm", "bmm", "matmul", "mv", "dot", "vdot"}, plain_gemm);
  add_rule(t, {"addmm", "addmm_", "addmv", "addmv_", "baddbmm", "baddbmm_"},
           [](const OpCall& c) { return add_gemm(c, false); });
  add_rule(t, {"addbmm", "addbmm_"}, [](const OpCall& c) { return add_gemm(c, true); });
  add_rule(t, {"linear"}, linear);
  add_rule(t, {"scaled_dot_product_attention"}, [](const OpCall& c) { return attention(c, 3); });
  // (query, key, value, dropout_p, is_causal, attn_mask?, scale?) since 2.2; 2.1's kernel has
  // no mask.
  add_rule(t, {"_scaled_dot_product_flash_attention_for_cpu"},
           [](const OpCall& c) { return attention(c, 5); });
  add_rule(t, {"_scaled_dot_product_flash_attention"},
           [](const OpCall& c) { return attention(c, kNoMask); });
  t["quantized::linear"] = linear;
  t["quantized::linear_relu"] = linear;
  t["quantized::linear_dynamic"] = linear;  // (input, weight, bias, reduce_range) once unpacked
  // (input [*, I] fp32, codes [O, I] int8, scales [O]): the scales read and applied as a bias is.
  t["plumb::int8_weight_linear"] = linear;

  add_rule(t, {"lstm_cell"}, [](const OpCall& c) { return rnn_cell(c, 4, 13); });
  add_rule(t, {"gru_cell"}, [](const OpCall& c) { return rnn_cell(c, 3, 10); });
  add_rule(t, {"_thnn_fused_lstm_cell"}, [](const OpCall& c) { return fused_cell(c, 4, 13); });
  add_rule(t, {"_thnn_fused_gru_cell"}, [](const OpCall& c) { return fused_cell(c, 3, 10); });
  add_rule(t, {"_thnn_fused_lstm_cell_backward", "_thnn_fused_lstm_cell_backward_impl"},
           [](const OpCall& c) { return fused_cell_backward(c, true); });
  add_rule(t, {"_thnn_fused_gru_cell_backward"},
           [](const OpCall& c) { return fused_cell_backward(c, false); });
}

}  // namespace plumb::profile::cost
