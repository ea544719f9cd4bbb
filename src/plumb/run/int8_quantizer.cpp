// Static int8 quantization through dispatcher kernels on AutocastCPU (see int8_quantizer.h): the
// quantizer's life (calibration, packing, the flow plan, its summary); the kernels themselves are
// in int8_kernels.cpp.
#include "plumb/run/int8_quantizer.h"

#include <ATen/autocast_mode.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <ATen/quantized/Quantizer.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/util/Exception.h>
#include <fmt/format.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "plumb/core/errors.h"
#include "plumb/core/text.h"
#include "plumb/core/torch_compat.h"
#include "plumb/run/engine_paths.h"
#include "plumb/run/int8_dataflow.h"
#include "plumb/run/int8_kernels.h"
#include "plumb/run/int8_weight_gemv.h"

namespace plumb::run {

Int8Quantizer::Int8Quantizer(torch::nn::Module& module, std::set<std::string> keep_fp32,
                             int embedding_bits, LinearActivations linear_activations)
    : module_(module), linear_activations_(linear_activations) {
  if (embedding_bits != 8 && embedding_bits != 4)
    throw UsageError("--embedding-bits must be 8 or 4");
  const auto& engines = at::globalContext().supportedQEngines();
  const auto has = [&](at::QEngine e) {
    return std::find(engines.begin(), engines.end(), e) != engines.end();
  };
  for (auto [engine, name] : {std::pair{at::kONEDNN, "onednn"}, std::pair{at::kX86, "x86"},
                              std::pair{at::kFBGEMM, "fbgemm"}}) {
    if (has(engine)) {
      at::globalContext().setQEngine(engine);
      engine_ = name;
      break;
    }
  }
  if (engine_.empty())
    throw Int8Unsupported{
        "this LibTorch has no x86 quantized engine (onednn, x86 or fbgemm); QNNPACK alone "
        "runs slower than fp32 on x86"};
  PLUMB_ASSERT(int8_kernels::g_active.layers == nullptr,
               "only one int8 quantizer may be active at a time");
  for (const auto& item : module.named_parameters(/*recurse=*/true)) {
    const auto& w = item.value();
    if ((w.dim() != 4 && w.dim() != 2) || w.scalar_type() != at::kFloat) continue;
    // Any matrix or conv kernel: only those the model then passes to one of the operators
    // the quantizer serves become layers.
    const std::string& name = item.key();
    const auto dot = name.rfind('.');
    auto layer = std::make_unique<Layer>();
    layer->path = dot == std::string::npos ? "" : name.substr(0, dot);
    layer->param = dot == std::string::npos ? name : name.substr(dot + 1);
    layer->weight = w.detach();
    layer->keep_fp32 = keep_fp32.count(layer->path) > 0;
    layers_[w.data_ptr()] = std::move(layer);
  }
  int8_kernels::g_active.layers = &layers_;
  int8_kernels::g_active.call_order = &call_order_;
  int8_kernels::g_active.embedding_bits = embedding_bits;
}

Int8Quantizer::~Int8Quantizer() {
  override_.reset();
  int8_kernels::g_active = int8_kernels::ActiveState{};
}

void Int8Quantizer::calibrate(const std::function<void()>& forward) {
  int8_kernels::g_active.phase = int8_kernels::Phase::kCalibrating;
  override_ = std::make_unique<KernelOverride>();
  {
    FlowTracer tracer;
    forward();
    const auto& calls = tracer.calls();
    trace_.insert(trace_.end(), calls.begin(), calls.end());
  }
  override_.reset();
}

namespace {

// The quantized tensor oneDNN's prepack takes, wrapped around codes already made.
torch::Tensor as_qint8(const Int8Rows& rows) {
  const auto zeros = torch::zeros({rows.scales.size(0)}, torch::kLong);
  return at::_make_per_channel_quantized_tensor(rows.codes, rows.scales.to(at::kDouble), zeros,
                                                /*axis=*/0);
}

// Symmetric per-output-channel weights: zero points 0, as oneDNN requires. Codes reach
// +-int8_weight_code_limit(): 127, or 63 where oneDNN's kernels sum product pairs in saturating
// 16-bit lanes (engine_paths.h; measured with ONEDNN_MAX_CPU_ISA=AVX2 on the tests' models:
// relative L2 0.22 with 8-bit weights, as with 4-bit embedding rows, against 0.01 with VNNI).
torch::Tensor per_channel_qint8(const torch::Tensor& w) {
  return as_qint8(quantize_rows(w, int8_weight_code_limit()));
}

c10::IValue pack_conv(const Int8Quantizer::Layer& layer, const torch::Tensor& weight,
                      const torch::Tensor& bias) {
  static const auto conv_prepack = int8_kernels::quantized_op("quantized::conv2d_prepack", "");
  return int8_kernels::call_boxed(
      conv_prepack, {per_channel_qint8(weight), bias.defined() ? c10::IValue(bias) : c10::IValue(),
                     c10::IValue(layer.stride), c10::IValue(layer.padding),
                     c10::IValue(layer.dilation), layer.groups});
}

// The convolution with the inference batch norm after it folded in: per output channel o,
// w'[o] = w[o] * g[o] / sqrt(var[o] + eps) and b'[o] = (b[o] - mean[o]) * g[o] / sqrt(var[o] +
// eps) + beta[o] (g = 1, beta = 0 for a norm without affine parameters).
c10::IValue pack_folded_conv(const Int8Quantizer::Layer& layer, const TracedCall& norm) {
  const auto& gamma = norm.norm[0];
  const auto& beta = norm.norm[1];
  auto factor = (norm.norm[3] + norm.eps).rsqrt();  // [O]
  if (gamma.defined()) factor = factor * gamma;
  const auto weight = layer.weight * factor.reshape({-1, 1, 1, 1});  // [O, I/g, kh, kw]
  auto bias = layer.bias.defined() ? layer.bias : torch::zeros_like(factor);
  bias = (bias - norm.norm[2]) * factor;  // [O]
  if (beta.defined()) bias = bias + beta;
  return pack_conv(layer, weight, bias);
}

}  // namespace

void Int8Quantizer::quantize() {
  static const auto linear_prepack = int8_kernels::quantized_op("quantized::linear_prepack", "");
  static const auto byte_rows =
      int8_kernels::quantized_op("quantized::embedding_bag_byte_prepack", "");
  static const auto nibble_rows =
      int8_kernels::quantized_op("quantized::embedding_bag_4bit_prepack", "");
  size_t ready = 0;
  for (const Layer* seen : call_order_) {
    Layer& layer = *layers_.at(seen->weight.data_ptr());
    if (!layer.refused.empty()) continue;
    if (layer.kind == "embedding_bag") {
      // Row-wise: each row's codes with its own fp32 scale and bias appended (4-bit: the
      // min/max range, not the optimised search of the paper's 4-bit scheme).
      const auto table = layer.weight.contiguous();
      layer.packed = int8_kernels::g_active.embedding_bits == 4
                         ? int8_kernels::call_boxed(nibble_rows, {table, false, int64_t{200}, 0.16})
                         : int8_kernels::call_boxed(byte_rows, {table});
      layer.ready = true;
      ++ready;
      continue;
    }
    layer.per_call = layer.kind == "linear" && linear_activations_ == LinearActivations::kPerCall;
    if (layer.kind == "lstm_cell" || layer.kind == "gru_cell" || layer.per_call) {
      // Dynamic: the input's range is taken per call, so only the weight is packed.
      if (layer.per_call) {
        // plumb's kernel takes the full range; where oneDNN does too, its codes are the same.
        layer.rows = quantize_rows(layer.weight);
        const auto weight = int8_weight_code_limit() == 127 ? as_qint8(layer.rows)
                                                            : per_channel_qint8(layer.weight);
        layer.packed = int8_kernels::call_boxed(linear_prepack, {weight, c10::IValue()});
      } else {
        layer.packed = int8_kernels::call_boxed(linear_prepack,
                                                {per_channel_qint8(layer.weight), c10::IValue()});
      }
      layer.ready = true;
      ++ready;
      continue;
    }
    std::tie(layer.in_scale, layer.in_zero) =
        int8_kernels::activation_qparams(layer.in_lo, layer.in_hi);
    std::tie(layer.out_scale, layer.out_zero) =
        int8_kernels::activation_qparams(layer.out_lo, layer.out_hi);
    layer.packed = layer.kind == "conv2d"
                       ? pack_conv(layer, layer.weight, layer.bias)
                       : int8_kernels::call_boxed(linear_prepack,
                                                  {per_channel_qint8(layer.weight), c10::IValue()});
    const int64_t in_channels = layer.weight.size(1) * layer.groups;
    if (layer.kind == "conv2d" && layer.groups > 1 && layer.groups != in_channels) {
      layer.refused =
          "grouped convolution: oneDNN's int8 kernel in LibTorch 1.13 corrupts memory "
          "on some grouped shapes";
      continue;
    }
    if (layer.kind == "conv2d" && !int8_kernels::probe_conv(layer)) {
      layer.refused = fmt::format(
          "oneDNN's int8 kernel returns a wrong shape for this geometry ({} -> {}, {} groups)",
          layer.weight.size(1) * layer.groups, layer.weight.size(0), layer.groups);
      layer.packed = c10::IValue();
      continue;
    }
    layer.ready = true;
    ++ready;
  }
  if (ready == 0)
    throw Int8Unsupported{
        "no convolution, linear, recurrent or embedding-bag layer with fp32 weights ran in "
        "calibration: nothing to quantize"};
  plan_flow();
  int8_kernels::g_active.phase = int8_kernels::Phase::kQuantized;
  override_ = std::make_unique<KernelOverride>();
}

void Int8Quantizer::plan_flow() {
  plan_ = std::make_unique<Int8FlowPlan>(plan_int8_flow(trace_, [&](const void* weight, FlowOp op) {
    const auto it = layers_.find(weight);
    if (it == layers_.end() || !it->second->ready || it->second->keep_fp32) return false;
    // A per-call linear quantizes an fp32 input itself: no int8 activation flows into it.
    return !it->second->per_call && it->second->kind == (op == FlowOp::kConv ? "conv2d" : "linear");
  }));
  for (const auto& [weight, flow] : plan_->convs) {
    Layer& layer = *layers_.at(weight);
    layer.flow = flow;
    // Its output is now what the absorbed batch norm and ReLU made of it, so is its range.
    std::tie(layer.out_scale, layer.out_zero) = int8_kernels::activation_qparams(flow.lo, flow.hi);
    if (flow.batch_norm != nullptr)
      layer.packed = pack_folded_conv(layer, trace_[flow.batch_norm_call]);
  }
  trace_.clear();
  int8_kernels::g_active.plan = plan_.get();
}

namespace {

std::string kind_label(const Int8Quantizer::Layer& layer) {
  const std::string& kind = layer.kind;
  if (kind == "lstm_cell" || kind == "gru_cell" || layer.per_call) return kind + ", dynamic";
  if (kind == "embedding_bag")
    return fmt::format("embedding_bag, {}-bit rows", int8_kernels::g_active.embedding_bits);
  return kind;
}

}  // namespace

std::vector<std::string> Int8Quantizer::layer_paths() const {
  std::vector<std::string> out;
  for (const Layer* layer : call_order_)
    if (std::find(out.begin(), out.end(), layer->path) == out.end()) out.push_back(layer->path);
  return out;
}

QuantizationSummary Int8Quantizer::summary() const {
  QuantizationSummary s;
  s.engine = engine_;
  s.engine_isa = onednn_isa();
  s.weight_code_limit = int8_weight_code_limit();
  s.embedding_bits = int8_kernels::g_active.embedding_bits;
  std::set<std::string> quantized_paths;
  for (const Layer* layer : call_order_) {
    if (!layer->ready) continue;
    const std::string entry =
        (layer->path.empty() ? layer->param : layer->path) + " (" + kind_label(*layer) + ")";
    if (std::find(s.quantized.begin(), s.quantized.end(), entry) != s.quantized.end()) continue;
    s.quantized.push_back(entry);
    if (layer->kind == "embedding_bag")
      ++s.embedding_bags;
    else if (layer->kind == "lstm_cell" || layer->kind == "gru_cell")
      ++s.dynamic_layers;
    else if (layer->per_call)
      ++s.per_call_linears;
    else
      ++s.static_layers;
    quantized_paths.insert(layer->path);
    s.int8_outputs += layer->flow.int8_out ? 1 : 0;
    s.fused_relus += layer->flow.relu ? 1 : 0;
  }
  // Batch norms folded into a convolution: by weight, named by their module.
  std::map<const void*, std::string> folded_into;
  for (const auto& [weight, layer] : layers_)
    if (layer->ready && layer->flow.batch_norm != nullptr)
      folded_into[layer->flow.batch_norm] = layer->path;
  for (const auto& item : module_.named_parameters(/*recurse=*/true)) {
    const auto it = folded_into.find(item.value().data_ptr());
    if (it == folded_into.end()) continue;
    const auto dot = item.key().rfind('.');
    const std::string norm = dot == std::string::npos ? item.key() : item.key().substr(0, dot);
    s.folded.push_back(norm + " (into " + it->second + ")");
    quantized_paths.insert(norm);
  }
  if (plan_ != nullptr) {
    for (const auto& [key, add] : plan_->adds) s.fused_relus += add.relu ? 1 : 0;
    s.int8_adds = plan_->adds.size();
  }
  // Every module with parameters of its own that did not run in int8.
  for (const auto& item : module_.named_modules("", /*include_self=*/true)) {
    const auto own = item.value()->named_parameters(/*recurse=*/false);
    if (own.is_empty() || quantized_paths.count(item.key()) > 0) continue;
    std::string type = item.value()->name();  // "torch::nn::BatchNorm2dImpl"
    const auto colon = type.rfind("::");
    if (colon != std::string::npos) type = type.substr(colon + 2);
    if (type.size() > 4 && type.compare(type.size() - 4, 4, "Impl") == 0)
      type.resize(type.size() - 4);
    const auto layer = std::find_if(layers_.begin(), layers_.end(),
                                    [&](const auto& kv) { return kv.second->path == item.key(); });
    std::string why;
    if (layer != layers_.end() && layer->second->keep_fp32)
      why = ": kept in fp32 by the plan";
    else if (layer != layers_.end() && !layer->second->refused.empty())
      why = ": " + layer->second->refused;
    else if (layer != layers_.end() && !layer->second->seen)
      why = ": not called as conv2d, linear, a recurrent cell or an embedding bag";
    s.left_fp32.push_back((item.key().empty() ? std::string("(root)") : item.key()) + " (" + type +
                          why + ")");
  }
  return s;
}

std::vector<WeightOutliers> weight_outliers(torch::nn::Module& module) {
  torch::NoGradGuard no_grad;
  std::vector<WeightOutliers> out;
  for (const auto& item : module.named_parameters(/*recurse=*/true)) {
    const auto& w = item.value();
    if ((w.dim() != 4 && w.dim() != 2) || !w.is_floating_point()) continue;
    const auto name = item.key();
    const bool weight =
        name == "weight" || (name.size() > 7 && name.compare(name.size() - 7, 7, ".weight") == 0);
    if (!weight) continue;
    auto rows = w.detach().to(torch::kFloat).reshape({w.size(0), -1}).abs();  // [O, rest]
    auto scale = (rows.amax(1, /*keepdim=*/true) / 127.0).clamp_min(1e-12);
    const auto codes = at::round(rows / scale);
    WeightOutliers o;
    o.name = name;
    o.elements = w.numel();
    o.outside_7_bits = codes.gt(63).to(torch::kDouble).mean().item<double>();
    out.push_back(o);
  }
  return out;
}

std::vector<std::string> QuantizationSummary::lines() const {
  std::vector<std::string> out;
  std::vector<std::string> parts;
  if (static_layers > 0)
    parts.push_back(fmt::format(
        "{} convolution/linear layers static (per-channel weights, activations calibrated per "
        "tensor): {} pass int8 activations on, the rest dequantize their output; {} batch norms "
        "folded into their convolution, {} ReLUs fused, {} residual adds in int8",
        static_layers, int8_outputs, folded.size(), fused_relus, int8_adds));
  if (dynamic_layers > 0)
    parts.push_back(fmt::format(
        "{} recurrent layers dynamic (per-channel weights, each product's input range taken per "
        "call)",
        dynamic_layers));
  if (per_call_linears > 0)
    parts.push_back(fmt::format(
        "{} linear layers dynamic (per-channel weights; a call of over {} rows quantizes its "
        "input at that input's own range, as a decoder's prefill and decode tokens differ; one of "
        "up to {} rows, a decode token per request, multiplies its fp32 input with the int8 "
        "weights in plumb's own {} kernel)",
        per_call_linears, kInt8WeightGemvMaxRows, kInt8WeightGemvMaxRows,
        gemv_isa_name(widest_gemv_isa())));
  if (embedding_bags > 0)
    parts.push_back(
        fmt::format("{} embedding bags row-wise ({}-bit codes, fp32 scale and bias per row)",
                    embedding_bags, embedding_bits));
  out.push_back(fmt::format("int8 ({} engine{}): {}", engine,
                            engine_isa.empty() ? "" : ", " + engine_isa + " kernels",
                            join(parts, "; ")));
  if (weight_code_limit < 127 && static_layers + dynamic_layers + per_call_linears > 0)
    out.push_back(fmt::format(
        "weights in 7 bits (codes within +-{}): without VNNI, oneDNN's int8 kernels add pairs of "
        "u8 x s8 products into saturating 16-bit lanes (vpmaddubsw), which 8-bit weights overflow",
        weight_code_limit));
  if (!left_fp32.empty()) {
    std::string list;
    const size_t shown = std::min<size_t>(left_fp32.size(), 12);
    for (size_t i = 0; i < shown; ++i) list += (i ? ", " : "") + left_fp32[i];
    if (shown < left_fp32.size()) list += fmt::format(", ... ({} more)", left_fp32.size() - shown);
    out.push_back(
        fmt::format("left in fp32 ({} modules with parameters): {}", left_fp32.size(), list));
  }
  return out;
}

}  // namespace plumb::run
