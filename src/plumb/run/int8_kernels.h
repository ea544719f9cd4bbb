// The private half of the int8 quantizer (int8_quantizer.h), shared by its two files: a
// candidate layer's record, the state of the quantizer whose kernels are registered, and the
// registration of the dispatcher kernels (int8_kernels.cpp: calibration observes through them,
// a quantized run executes int8 through them). Only int8_quantizer.cpp and int8_kernels.cpp
// include it.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <torch/library.h>

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "plumb/run/int8_dataflow.h"
#include "plumb/run/int8_quantizer.h"
#include "plumb/run/int8_weight_gemv.h"

namespace plumb::run {

struct Int8Quantizer::Layer {
  std::string path;   // module path, "layer1.0.conv1"
  std::string param;  // parameter name in the module, "weight", "w_ih"
  // "conv2d" | "linear" (static) | "lstm_cell" | "gru_cell" (dynamic) | "embedding_bag"
  std::string kind;
  bool per_call = false;  // linear: input range taken per call (LinearActivations::kPerCall)
  torch::Tensor weight;   // the fp32 parameter ([O, I, kh, kw], [O, I] or [rows, dim])
  bool keep_fp32 = false;
  bool seen = false;
  float in_lo = std::numeric_limits<float>::infinity(), in_hi = -in_lo;
  float out_lo = in_lo, out_hi = -in_lo;
  // conv2d geometry and bias as called (the prepacked weight carries them)
  std::vector<int64_t> stride, padding, dilation;
  int64_t groups = 1;
  torch::Tensor bias;
  std::vector<int64_t> input_sizes, output_sizes;  // as first called in calibration
  std::string refused;  // why the layer stays fp32 although it was a candidate
  // after quantize()
  bool ready = false;
  c10::IValue packed;
  Int8Rows rows;  // per_call linear: the codes the few-row kernel reads (int8_weight_gemv.h)
  double in_scale = 1, out_scale = 1;
  int64_t in_zero = 0, out_zero = 0;
  ConvFlow flow;  // conv2d: what it absorbed and whether its output stays int8
};

namespace int8_kernels {

enum class Phase { kCalibrating, kQuantized };

using WeakImpl = c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>;

// A tensor a quantized convolution (or add) returned in this run: what made it, so the batch
// norm folded into that convolution and the ReLU fused into it pass it through, and a residual
// add finds its output range. The weak reference keeps the address from naming another tensor.
struct Produced {
  WeakImpl alive;
  const Int8Quantizer::Layer* layer = nullptr;  // null: made by an add
  bool relu_done = false;
};

// The quantizer whose kernels are registered, and what they do now. One at a time: the
// registration is process-wide (a second quantizer while one lives is a bug).
struct ActiveState {
  std::map<const void*, std::unique_ptr<Int8Quantizer::Layer>>* layers = nullptr;
  std::vector<const Int8Quantizer::Layer*>* call_order = nullptr;
  Phase phase = Phase::kCalibrating;
  int embedding_bits = 8;  // row-wise bits of quantized embedding bags: 8 or 4
  const Int8FlowPlan* plan = nullptr;
  std::unordered_map<const c10::TensorImpl*, Produced> produced;
};
extern ActiveState g_active;

c10::OperatorHandle quantized_op(const char* name, const char* overload);
c10::IValue call_boxed(const c10::OperatorHandle& op, torch::jit::Stack stack);
// Affine quint8 parameters covering [lo, hi] (and 0, so zero padding stays exact).
std::pair<double, int64_t> activation_qparams(float lo, float hi);
// Whether a prepacked convolution keeps its calibration shape when called (int8_kernels.cpp).
bool probe_conv(const Int8Quantizer::Layer& layer);

}  // namespace int8_kernels

// Autocast on, with the quantizer's kernels registered, for as long as it lives (int8_kernels.cpp).
struct KernelOverride {
  bool was_enabled;
  at::ScalarType was_dtype;
  std::unique_ptr<torch::Library> library;
  KernelOverride();
  ~KernelOverride();
};

}  // namespace plumb::run
