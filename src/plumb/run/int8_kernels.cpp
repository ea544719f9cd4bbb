// The int8 quantizer's dispatcher kernels on AutocastCPU and their registration (see
// int8_kernels.h): in calibration they observe each layer's input and output ranges; once
// quantized they run the layers in int8, keeping activations int8 between layers where the
// flow plan says so.
#include "plumb/run/int8_kernels.h"

#include <ATen/autocast_mode.h>
#include <ATen/quantized/Quantizer.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/util/Exception.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "plumb/core/errors.h"
#include "plumb/core/text.h"
#include "plumb/core/torch_compat.h"
#include "plumb/run/engine_paths.h"

namespace plumb::run {
namespace int8_kernels {

ActiveState g_active;

void remember(const torch::Tensor& t, const Int8Quantizer::Layer* layer, bool relu_done) {
  auto& produced = g_active.produced;
  if (produced.size() > 512) {  // forget the tensors that died
    for (auto it = produced.begin(); it != produced.end();)
      it = it->second.alive.expired() ? produced.erase(it) : std::next(it);
  }
  produced.insert_or_assign(t.unsafeGetTensorImpl(),
                            Produced{WeakImpl(t.getIntrusivePtr()), layer, relu_done});
}

const Produced* produced_by(const torch::Tensor& t) {
  const auto it = g_active.produced.find(t.unsafeGetTensorImpl());
  return it == g_active.produced.end() ? nullptr : &it->second;
}

c10::OperatorHandle quantized_op(const char* name, const char* overload) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, overload);
}

c10::IValue call_boxed(const c10::OperatorHandle& op, torch::jit::Stack stack) {
  op.callBoxed(&stack);
  return std::move(stack.back());
}

// Affine quint8 parameters covering [lo, hi] (and 0, so zero padding stays exact).
std::pair<double, int64_t> activation_qparams(float lo, float hi) {
  const double low = std::min(0.0f, lo), high = std::max(0.0f, hi);
  // Floored only at the smallest normal float: a fixed floor such as PyTorch observers' 1.2e-7
  // zeroes whole layers of a randomly initialised network whose activations have shrunk to
  // 1e-12 (mobilenet_v1's output did: relative error 1.0 until this floor).
  const double scale =
      std::max((high - low) / 255.0, static_cast<double>(std::numeric_limits<float>::min()));
  const int64_t zero = std::clamp<int64_t>(std::llround(-low / scale), 0, 255);
  return {scale, zero};
}

// Elementwise ATen ops (vectorised), in place after the first, rather than
// at::quantize_per_tensor / at::dequantize: without FBGEMM, as in Debian's LibTorch, those took
// 24 and 14 ms for an [8, 256, 56, 56] activation at 2 threads, this 4.6 and 3.1 ms (measured
// with python3-torch 1.13; out-of-place chains of the same ops took 17 and 26 ms).
torch::Tensor quantize_activation(const torch::Tensor& x, double scale, int64_t zero) {
  auto codes =
      (x * (1.0 / scale)).round_().add_(static_cast<double>(zero)).clamp_(0, 255).to(at::kByte);
  return at::_make_per_tensor_quantized_tensor(codes, scale, zero);
}

// `scale` and `zero` are the ones the kernel was asked to produce (asking the tensor would be
// two more operator calls per layer).
torch::Tensor dequantize_activation(const torch::Tensor& q, double scale, int64_t zero) {
  return q.int_repr().to(at::kFloat).sub_(static_cast<double>(zero)).mul_(scale);
}

void widen(float& lo, float& hi, const torch::Tensor& t) {
  auto [min, max] = at::aminmax(t);
  lo = std::min(lo, min.item<float>());
  hi = std::max(hi, max.item<float>());
}

Int8Quantizer::Layer* find_layer(const torch::Tensor& weight, bool transposed) {
  if (g_active.layers == nullptr || !weight.defined() || weight.dim() < 2) return nullptr;
  auto it = g_active.layers->find(weight.data_ptr());
  if (it == g_active.layers->end()) return nullptr;
  Int8Quantizer::Layer& layer = *it->second;
  const auto& w = layer.weight;
  if (layer.keep_fp32 || weight.dim() != w.dim() || weight.scalar_type() != at::kFloat)
    return nullptr;
  // The very parameter (conv), or its transpose as F::linear passes it (weight.t()).
  if (!transposed)
    return weight.sizes() == w.sizes() && weight.strides() == w.strides() ? &layer : nullptr;
  return weight.dim() == 2 && weight.size(0) == w.size(1) && weight.size(1) == w.size(0) &&
                 weight.stride(0) == w.stride(1) && weight.stride(1) == w.stride(0)
             ? &layer
             : nullptr;
}

void note_call(Int8Quantizer::Layer& layer) {
  if (!layer.seen) g_active.call_order->push_back(&layer);
  layer.seen = true;
}

// [.., I] @ weight^T in int8 with the activation range taken from this very input (dynamic
// quantization: recurrent state and a decoder's tokens change every call, so no calibrated
// range fits them) -> [.., O].
torch::Tensor dynamic_linear(const Int8Quantizer::Layer& layer, const torch::Tensor& input) {
  static const auto op = quantized_op("quantized::linear_dynamic", "");
  return call_boxed(op, {input.contiguous(), layer.packed, false}).toTensor();
}

// [.., I] @ weight^T in int8 -> [.., O] fp32 (no bias: the caller adds it, as F::linear does).
torch::Tensor int8_linear(const Int8Quantizer::Layer& layer, const torch::Tensor& input) {
  static const auto op = quantized_op("quantized::linear", "");
  auto flat = input.reshape({-1, input.size(-1)}).contiguous();  // [N, I]
  auto shape = input.sizes().vec();
  shape.back() = layer.weight.size(0);
  // A few rows (decode tokens) are bound by the weight bytes: the int8 codes streamed by
  // plumb's own kernel; more rows by arithmetic: oneDNN's int8 GEMM.
  if (layer.per_call && flat.size(0) <= kInt8WeightGemvMaxRows)
    return int8_weight_linear(flat, layer.rows.codes, layer.rows.scales).view(shape);  // [.., O]
  if (layer.per_call) return dynamic_linear(layer, flat).view(shape);                  // [.., O]
  // An int8 input (a pooled int8 feature map) keeps its own scale.
  auto qx = flat.is_quantized() ? flat : quantize_activation(flat, layer.in_scale, layer.in_zero);
  auto qy = call_boxed(op, {qx, layer.packed, layer.out_scale, layer.out_zero}).toTensor();
  return dequantize_activation(qy, layer.out_scale, layer.out_zero).view(shape);  // [.., O]
}

// The fp32 product the layer computes without its bias, observed for calibration.
torch::Tensor observed_linear(Int8Quantizer::Layer& layer, const torch::Tensor& input,
                              const torch::Tensor& weight_t) {
  note_call(layer);
  layer.kind = "linear";
  auto y = at::matmul(input, weight_t);
  widen(layer.in_lo, layer.in_hi, input);
  widen(layer.out_lo, layer.out_hi, y);
  return y;
}

// The kernels below run with AutocastCPU excluded, so what they call goes to the CPU kernels.
torch::Tensor conv2d_kernel(const torch::Tensor& input, const torch::Tensor& weight,
                            const c10::optional<torch::Tensor>& bias, at::IntArrayRef stride,
                            at::IntArrayRef padding, at::IntArrayRef dilation, int64_t groups) {
  c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::DispatchKey::AutocastCPU);
  Int8Quantizer::Layer* layer = input.dim() == 4 ? find_layer(weight, false) : nullptr;
  if (layer == nullptr || (g_active.phase == Phase::kQuantized && !layer->ready))
    return at::conv2d(input, weight, bias, stride, padding, dilation, groups);
  if (g_active.phase == Phase::kCalibrating) {
    note_call(*layer);
    layer->kind = "conv2d";
    layer->stride = stride.vec();
    layer->padding = padding.vec();
    layer->dilation = dilation.vec();
    layer->groups = groups;
    layer->bias = bias.has_value() ? *bias : torch::Tensor();
    auto y = at::conv2d(input, weight, bias, stride, padding, dilation, groups);
    if (layer->input_sizes.empty()) {
      layer->input_sizes = input.sizes().vec();
      layer->output_sizes = y.sizes().vec();
    }
    widen(layer->in_lo, layer->in_hi, input);
    widen(layer->out_lo, layer->out_hi, y);
    return y;
  }
  static const auto conv = quantized_op("quantized::conv2d", "new");
  static const auto conv_relu = quantized_op("quantized::conv2d_relu", "new");
  // oneDNN's quantized convolution reads NCHW or NHWC buffers only: a permuted view (a channel
  // shuffle's output) is copied to the closest of the two first. An int8 input (the output of
  // an earlier layer the plan keeps in int8) goes in as it is.
  auto qx = input.is_quantized()
                ? input
                : quantize_activation(input.contiguous(input.suggest_memory_format()),
                                      layer->in_scale, layer->in_zero);
  auto qy = call_boxed(layer->flow.relu ? conv_relu : conv,
                       {qx, layer->packed, layer->out_scale, layer->out_zero})
                .toTensor();
  // A wrong shape is a kernel bug (see probe_conv): fail the run rather than compute on.
  if (qy.size(1) != layer->weight.size(0) || qy.size(0) != input.size(0))
    throw std::runtime_error(fmt::format(
        "oneDNN's quantized convolution returned shape {} for layer {} (expected {} channels)",
        c10::str(qy.sizes()), layer->path, layer->weight.size(0)));
  auto y = layer->flow.int8_out ? qy : dequantize_activation(qy, layer->out_scale, layer->out_zero);
  // Only what a later kernel looks up: a folded batch norm or a fused ReLU to pass over, or an
  // int8 output an add may key its range to.
  if (layer->flow.int8_out || layer->flow.batch_norm != nullptr || layer->flow.relu)
    remember(y, layer, layer->flow.relu);
  return y;
}

// batch_norm: the one folded into the convolution that made `input` has been applied already.
torch::Tensor batch_norm_kernel(const torch::Tensor& input,
                                const c10::optional<torch::Tensor>& weight,
                                const c10::optional<torch::Tensor>& bias,
                                const c10::optional<torch::Tensor>& running_mean,
                                const c10::optional<torch::Tensor>& running_var, bool training,
                                double momentum, double eps, bool cudnn_enabled) {
  c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::DispatchKey::AutocastCPU);
  if (g_active.phase == Phase::kQuantized && weight.has_value() && weight->defined()) {
    const Produced* made = produced_by(input);
    if (made != nullptr && made->layer != nullptr &&
        made->layer->flow.batch_norm == weight->data_ptr())
      return input;
  }
  return at::batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
                        cudnn_enabled);
}

// relu / relu_: a ReLU fused into the convolution or add that made `self` has been applied.
bool relu_applied(const torch::Tensor& self) {
  if (g_active.phase != Phase::kQuantized) return false;
  const Produced* made = produced_by(self);
  return made != nullptr && made->relu_done;
}

torch::Tensor relu_kernel(const torch::Tensor& self) {
  c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::DispatchKey::AutocastCPU);
  return relu_applied(self) ? self : at::relu(self);
}

torch::Tensor& relu_inplace_kernel(torch::Tensor& self) {
  c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::DispatchKey::AutocastCPU);
  return relu_applied(self) ? self : at::relu_(self);
}

// The plan's add for `self + other` when both are int8 and `self` came from a convolution the
// plan keys an add to (quantized::add, or add_relu when the plan fused the ReLU after it, at the
// output range calibrated for it); null otherwise.
const AddFlow* planned_add(const torch::Tensor& self, const torch::Tensor& other,
                           const at::Scalar& alpha) {
  const Produced* made = produced_by(self);
  if (!self.is_quantized() || !other.is_quantized() || alpha.toDouble() != 1.0 || made == nullptr ||
      made->layer == nullptr || g_active.plan == nullptr)
    return nullptr;
  const auto flow = g_active.plan->adds.find(made->layer->weight.data_ptr());
  return flow == g_active.plan->adds.end() ? nullptr : &flow->second;
}

// An int8 operand the plan gave no int8 add (it cannot happen for a plan's tensors; any other
// reaches here as fp32): computed in fp32.
torch::Tensor as_fp32(const torch::Tensor& t) {
  return t.is_quantized() ? t.dequantize() : t;
}

torch::Tensor add_kernel(const torch::Tensor& self, const torch::Tensor& other,
                         const at::Scalar& alpha) {
  c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::DispatchKey::AutocastCPU);
  if (g_active.phase == Phase::kQuantized && (self.is_quantized() || other.is_quantized())) {
    if (const AddFlow* flow = planned_add(self, other, alpha)) {
      static const auto add = quantized_op("quantized::add", "");
      static const auto add_relu = quantized_op("quantized::add_relu", "");
      const auto [scale, zero] = activation_qparams(flow->lo, flow->hi);
      auto sum = call_boxed(flow->relu ? add_relu : add, {self, other, scale, zero}).toTensor();
      remember(sum, nullptr, flow->relu);
      return sum;
    }
    return at::add(as_fp32(self), as_fp32(other), alpha);
  }
  return at::add(self, other, alpha);
}

// `out += identity` with `out` int8: the int8 sum replaces out's codes and scale in place.
torch::Tensor& add_inplace_kernel(torch::Tensor& self, const torch::Tensor& other,
                                  const at::Scalar& alpha) {
  c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::DispatchKey::AutocastCPU);
  if (g_active.phase != Phase::kQuantized || (!self.is_quantized() && !other.is_quantized()))
    return self.add_(other, alpha);
  if (!self.is_quantized()) return self.add_(as_fp32(other), alpha);
  static const auto add_out = quantized_op("quantized::add", "out");
  static const auto add_relu_out = quantized_op("quantized::add_relu", "out");
  const AddFlow* flow = planned_add(self, other, alpha);
  PLUMB_ASSERT(flow != nullptr && self.is_non_overlapping_and_dense(),
               "an in-place add into an int8 tensor without a planned int8 add");
  // The sum is written over self's codes at the add's own scale: `before` reads the same codes
  // at the old one (each element is read before it is written, as in any in-place add).
  const auto [scale, zero] = activation_qparams(flow->lo, flow->hi);
  const auto before = self.view(self.sizes());
  at::set_quantizer_(self, at::make_per_tensor_affine_quantizer(scale, zero, self.scalar_type()));
  call_boxed(flow->relu ? add_relu_out : add_out, {before, other, self});
  remember(self, nullptr, flow->relu);
  return self;
}

// LibTorch 1.13's oneDNN quantized convolution returns a wrong shape from its second call on
// some grouped geometries (measured in Python on the same library: 68 -> 248 channels, 4
// groups, 1x1; 68 -> 272 or 64 -> 248 are fine) and corrupts the heap (faster_rcnn_shufflenet
// at full size aborted in free()). Grouped, non-depthwise convolutions therefore stay fp32, and
// each other prepacked convolution is called a few times on its calibration shape before use:
// one that misbehaves stays fp32 too, with why.
bool probe_conv(const Int8Quantizer::Layer& layer) {
  static const auto op = quantized_op("quantized::conv2d", "new");
  auto x = at::_empty_affine_quantized(layer.input_sizes, at::device(at::kCPU).dtype(at::kQUInt8),
                                       layer.in_scale, layer.in_zero);
  for (int i = 0; i < 3; ++i) {
    auto y = call_boxed(op, {x, layer.packed, layer.out_scale, layer.out_zero}).toTensor();
    if (y.sizes().vec() != layer.output_sizes) return false;
  }
  return true;
}

torch::Tensor addmm_kernel(const torch::Tensor& self, const torch::Tensor& mat1,
                           const torch::Tensor& mat2, const at::Scalar& beta,
                           const at::Scalar& alpha) {
  c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::DispatchKey::AutocastCPU);
  Int8Quantizer::Layer* layer = find_layer(mat2, true);
  const bool plain = beta.toDouble() == 1.0 && alpha.toDouble() == 1.0;
  if (layer == nullptr || !plain || (g_active.phase == Phase::kQuantized && !layer->ready))
    return at::addmm(self, mat1, mat2, beta, alpha);
  if (g_active.phase == Phase::kCalibrating) return observed_linear(*layer, mat1, mat2) + self;
  return int8_linear(*layer, mat1) + self;  // [N, O]
}

torch::Tensor matmul_kernel(const torch::Tensor& self, const torch::Tensor& other) {
  c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::DispatchKey::AutocastCPU);
  Int8Quantizer::Layer* layer = self.dim() >= 2 ? find_layer(other, true) : nullptr;
  if (layer == nullptr || (g_active.phase == Phase::kQuantized && !layer->ready))
    return at::matmul(self, other);
  if (g_active.phase == Phase::kCalibrating) return observed_linear(*layer, self, other);
  return int8_linear(*layer, self);
}

torch::Tensor linear_kernel(const torch::Tensor& input, const torch::Tensor& weight,
                            const c10::optional<torch::Tensor>& bias) {
  c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::DispatchKey::AutocastCPU);
  Int8Quantizer::Layer* layer = input.dim() >= 2 ? find_layer(weight, false) : nullptr;
  if (layer == nullptr || (g_active.phase == Phase::kQuantized && !layer->ready))
    return at::linear(input, weight, bias);
  auto y = g_active.phase == Phase::kCalibrating ? observed_linear(*layer, input, weight.t())
                                                 : int8_linear(*layer, input);
  return bias.has_value() && bias->defined() ? y + *bias : y;
}

// A recurrent cell whose two weight matrices are known layers: noted in calibration, and run
// with dynamic int8 products once both are ready. Null when the cell stays fp32.
std::pair<Int8Quantizer::Layer*, Int8Quantizer::Layer*> cell_layers(const torch::Tensor& w_ih,
                                                                    const torch::Tensor& w_hh,
                                                                    const char* kind) {
  Int8Quantizer::Layer* ih = find_layer(w_ih, false);
  Int8Quantizer::Layer* hh = find_layer(w_hh, false);
  if (ih == nullptr || hh == nullptr) return {nullptr, nullptr};
  if (g_active.phase == Phase::kCalibrating) {
    for (auto* layer : {ih, hh}) {
      note_call(*layer);
      layer->kind = kind;
    }
    return {nullptr, nullptr};
  }
  if (!ih->ready || !hh->ready) return {nullptr, nullptr};
  return {ih, hh};
}

torch::Tensor with_bias(torch::Tensor y, const c10::optional<torch::Tensor>& bias) {
  return bias.has_value() && bias->defined() ? y.add_(*bias) : y;
}

// lstm_cell(x [B, I], (h, c) [B, H], w_ih [4H, I], w_hh [4H, H], b_ih?, b_hh?): gates i, f, g,
// o as LibTorch's own cell orders them; only the two products change precision.
std::tuple<torch::Tensor, torch::Tensor> lstm_cell_kernel(
    const torch::Tensor& input, at::TensorList hx, const torch::Tensor& w_ih,
    const torch::Tensor& w_hh, const c10::optional<torch::Tensor>& b_ih,
    const c10::optional<torch::Tensor>& b_hh) {
  c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::DispatchKey::AutocastCPU);
  const auto [ih, hh] = cell_layers(w_ih, w_hh, "lstm_cell");
  if (ih == nullptr) return at::lstm_cell(input, hx, w_ih, w_hh, b_ih, b_hh);
  auto gates = with_bias(dynamic_linear(*ih, input), b_ih)
                   .add_(with_bias(dynamic_linear(*hh, hx[0]), b_hh));  // [B, 4H]
  auto chunks = gates.unsafe_chunk(4, 1);
  auto in_gate = chunks[0].sigmoid_(), forget = chunks[1].sigmoid_();
  auto cell = chunks[2].tanh_(), out_gate = chunks[3].sigmoid_();
  auto c = forget.mul(hx[1]).add_(in_gate.mul_(cell));  // [B, H]
  auto h = out_gate.mul_(c.tanh());
  return {h, c};
}

// gru_cell(x [B, I], h [B, H], w_ih [3H, I], w_hh [3H, H], b_ih?, b_hh?): gates r, z, n; the
// reset gate scales the recurrent product of n, as LibTorch's cell does.
torch::Tensor gru_cell_kernel(const torch::Tensor& input, const torch::Tensor& hx,
                              const torch::Tensor& w_ih, const torch::Tensor& w_hh,
                              const c10::optional<torch::Tensor>& b_ih,
                              const c10::optional<torch::Tensor>& b_hh) {
  c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::DispatchKey::AutocastCPU);
  const auto [ih, hh] = cell_layers(w_ih, w_hh, "gru_cell");
  if (ih == nullptr) return at::gru_cell(input, hx, w_ih, w_hh, b_ih, b_hh);
  auto in_gates = with_bias(dynamic_linear(*ih, input), b_ih).unsafe_chunk(3, 1);  // 3 x [B, H]
  auto h_gates = with_bias(dynamic_linear(*hh, hx), b_hh).unsafe_chunk(3, 1);
  auto reset = h_gates[0].add_(in_gates[0]).sigmoid_();
  auto update = h_gates[1].add_(in_gates[1]).sigmoid_();
  auto candidate = in_gates[2].add(h_gates[2].mul_(reset)).tanh_();
  return (hx - candidate).mul_(update).add_(candidate);
}

// embedding_bag(weight [rows, D], indices, offsets, ...) -> (out [bags, D], offset2bag,
// bag_size, max_indices). Row-wise quantized tables (8- or 4-bit codes with a scale and bias per
// row) serve sum pooling without per-sample weights; anything else stays fp32. The three
// bookkeeping outputs are only read by the backward pass, which int8 inference never runs.
std::tuple<torch::Tensor, torch::Tensor, torch::Tensor, torch::Tensor> embedding_bag_kernel(
    const torch::Tensor& weight, const torch::Tensor& indices, const torch::Tensor& offsets,
    bool scale_grad_by_freq, int64_t mode, bool sparse,
    const c10::optional<torch::Tensor>& per_sample_weights, bool include_last_offset,
    c10::optional<int64_t> padding_idx) {
  c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::DispatchKey::AutocastCPU);
  Int8Quantizer::Layer* layer = find_layer(weight, false);
  const bool plain = mode == 0 &&
                     !(per_sample_weights.has_value() && per_sample_weights->defined()) &&
                     !(padding_idx.has_value() && *padding_idx >= 0) && indices.dim() == 1;
  if (layer != nullptr && g_active.phase == Phase::kCalibrating) {
    note_call(*layer);
    layer->kind = "embedding_bag";
    if (!plain && layer->refused.empty())
      layer->refused =
          "the row-wise int8 embedding bag runs sum pooling without per-sample weights or "
          "padding index only";
  }
  if (layer == nullptr || !layer->ready || g_active.phase != Phase::kQuantized)
    return at::embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode, sparse,
                             per_sample_weights, include_last_offset, padding_idx);
  static const auto byte_op = quantized_op("quantized::embedding_bag_byte_rowwise_offsets", "");
  static const auto nibble_op = quantized_op("quantized::embedding_bag_4bit_rowwise_offsets", "");
  auto out = call_boxed(g_active.embedding_bits == 4 ? nibble_op : byte_op,
                        {layer->packed, indices, offsets, scale_grad_by_freq, mode, false,
                         c10::IValue(), c10::IValue(), include_last_offset})
                 .toTensor();  // [bags, D]
  const auto none = torch::empty({0}, indices.options());
  return {out, none, none, none};
}

std::tuple<torch::Tensor, torch::Tensor, torch::Tensor, torch::Tensor> embedding_bag_plain_kernel(
    const torch::Tensor& weight, const torch::Tensor& indices, const torch::Tensor& offsets,
    bool scale_grad_by_freq, int64_t mode, bool sparse,
    const c10::optional<torch::Tensor>& per_sample_weights, bool include_last_offset) {
  return embedding_bag_kernel(weight, indices, offsets, scale_grad_by_freq, mode, sparse,
                              per_sample_weights, include_last_offset, c10::nullopt);
}

// Swallows the dispatcher's "Overriding a previously registered kernel" warning: replacing
// autocast's kernels for the quantizer's lifetime is the point.
class SilentWarnings : public c10::WarningHandler {
 public:
#if PLUMB_TORCH_2
  void process(const c10::Warning&) override {}
#else
  void process(const c10::SourceLocation&, const std::string&, const bool) override {}
#endif
};
#if PLUMB_TORCH_2
using WarningHandlerGuard = c10::WarningUtils::WarningHandlerGuard;
#else
using WarningHandlerGuard = c10::Warning::WarningHandlerGuard;
#endif

}  // namespace int8_kernels

// Autocast on, which routes the operators above to their kernels. Every other operator
// autocast has a CPU kernel for gets a fallthrough, so it runs as without autocast (fp32)
// instead of being cast to bf16: LibTorch 1.13's CPU autocast accepts no dtype but bf16, so
// "autocast to fp32" is not an option. The previous autocast state comes back after.
KernelOverride::KernelOverride()
    : was_enabled(at::autocast::is_cpu_enabled()),
      was_dtype(at::autocast::get_autocast_cpu_dtype()) {
  using namespace int8_kernels;
  SilentWarnings silent;
  WarningHandlerGuard guard(&silent);
  library = std::make_unique<torch::Library>(torch::Library::IMPL, "aten",
                                             c10::DispatchKey::AutocastCPU, __FILE__, __LINE__);
  const std::set<std::string> ours = {
      "conv2d",     "addmm",    "matmul",        "linear",
      "lstm_cell",  "gru_cell", "embedding_bag", "embedding_bag.padding_idx",
      "batch_norm", "relu",     "relu_",         "add.Tensor",
      "add_.Tensor"};
  auto& dispatcher = c10::Dispatcher::singleton();
  for (const auto& name : dispatcher.getAllOpNames()) {
    const auto handle = dispatcher.findOp(name);
    if (!handle || !handle->hasKernelForDispatchKey(c10::DispatchKey::AutocastCPU)) continue;
    if (name.name.rfind("aten::", 0) != 0) continue;
    const std::string base = name.name.substr(6);
    const std::string full = name.overload_name.empty() ? base : base + "." + name.overload_name;
    if (ours.count(full) > 0) continue;
    library->impl(full.c_str(), torch::CppFunction::makeFallthrough());
  }
  library->impl("conv2d", TORCH_FN(conv2d_kernel));
  library->impl("addmm", TORCH_FN(addmm_kernel));
  library->impl("matmul", TORCH_FN(matmul_kernel));
  library->impl("linear", TORCH_FN(linear_kernel));
  library->impl("lstm_cell", TORCH_FN(lstm_cell_kernel));
  library->impl("gru_cell", TORCH_FN(gru_cell_kernel));
  library->impl("embedding_bag", TORCH_FN(embedding_bag_plain_kernel));
  library->impl("embedding_bag.padding_idx", TORCH_FN(embedding_bag_kernel));
  library->impl("batch_norm", TORCH_FN(batch_norm_kernel));
  library->impl("relu", TORCH_FN(relu_kernel));
  library->impl("relu_", TORCH_FN(relu_inplace_kernel));
  library->impl("add.Tensor", TORCH_FN(add_kernel));
  library->impl("add_.Tensor", TORCH_FN(add_inplace_kernel));
  at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
  at::autocast::set_cpu_enabled(true);
}

KernelOverride::~KernelOverride() {
  using namespace int8_kernels;
  at::autocast::set_cpu_enabled(was_enabled);
  at::autocast::set_autocast_cpu_dtype(was_dtype);
  at::autocast::clear_cache();
  SilentWarnings silent;
  WarningHandlerGuard guard(&silent);
  library.reset();  // deregisters: autocast's own kernels are back
}

}  // namespace plumb::run
