// Post-training static int8 quantization of any workload's convolutions and linear layers,
// without touching workload code: LibTorch's quantized operators (quantized::conv2d,
// quantized::linear) on the oneDNN quantized engine.
//
// How: the C++ frontend's Conv2d calls aten::conv2d and its Linear calls aten::addmm (2-D
// input) or aten::matmul (more dims) with the weight transposed; recurrent layers call
// aten::lstm_cell / aten::gru_cell and EmbeddingBag aten::embedding_bag. While a quantizer is
// active it registers kernels for those operators on the AutocastCPU dispatch key (the hook CPU
// autocast itself uses; the registration lives only as long as the quantizer, so autocast is
// restored after it); batch_norm, relu and add are served too, for the int8 graph below. A
// call whose weight is one of the module's parameters is executed in int8;
// every other call (attention products, plain embeddings) runs in fp32 as before.
//
// Convolutions and linear layers are quantized statically: weights per output channel,
// symmetric qint8; activations per tensor, affine quint8, ranges calibrated on batches from the
// workload's own synthetic data (its real input distribution). Recurrent cells are quantized
// dynamically (quantized::linear_dynamic: the same weights, each product's input range taken
// per call, since the state's range moves with every step). Embedding bags with sum pooling
// are quantized row-wise (8- or 4-bit codes with an fp32 scale and bias per row).
// Between layers the activations stay int8 where calibration's trace proves it safe
// (int8_dataflow.h): a batch norm a convolution alone feeds is folded into its weights, the
// ReLU after it fused (quantized::conv2d_relu), residual adds run as quantized::add_relu, and
// pooling and views run their quantized kernels. A layer whose output something without an int8
// kernel reads (or that leaves the model) dequantizes it; an fp32 input is quantized at the
// calibrated range. What stays fp32 is listed in the summary.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "plumb/run/int8_dataflow.h"

namespace plumb::run {

struct KernelOverride;  // the registered kernels and the autocast state they need

// What a quantized run executed in int8 and what stayed in fp32, for the record.
struct QuantizationSummary {
  std::vector<std::string> quantized;  // "layer1.0.conv1 (conv2d)", in first-call order
  std::vector<std::string> left_fp32;  // "bn1 (BatchNorm2d)", "lstm (LSTM: no int8 kernel used)"
  std::string engine;                  // "onednn"
  std::string engine_isa;              // the ISA oneDNN dispatches on, "avx2"; "" where unknown
  int weight_code_limit = 127;         // largest |weight code|: 63 where int8 pairs saturate
  size_t static_layers = 0;            // conv/linear with calibrated activation ranges
  size_t dynamic_layers = 0;           // recurrent cells (activation range per call)
  size_t per_call_linears = 0;         // linear layers quantizing their input per call
  size_t embedding_bags = 0;           // row-wise tables, `embedding_bits` per code
  int embedding_bits = 8;
  // The int8 graph (int8_dataflow.h): convolutions whose output stays int8, ReLUs fused into a
  // convolution or add, residual add sites run in int8, batch norms folded ("layer1.0.bn1 (into
  // layer1.0.conv1)").
  size_t int8_outputs = 0, fused_relus = 0, int8_adds = 0;
  std::vector<std::string> folded;
  std::vector<std::string> lines() const;  // one human-readable line per fact, for notes
};

// Thrown when this LibTorch cannot run int8 (no quantized engine, or no layer to quantize).
struct Int8Unsupported {
  std::string reason;
};

// Per conv/linear weight tensor: the share of weights whose per-channel int8 code needs the
// 8th bit (|code| > 63 with scale max|w|/127): the outliers an outlier-aware scheme (the
// Facebook study, section 3.2) would keep apart to quantize the rest in 7 bits.
struct WeightOutliers {
  std::string name;  // parameter name, "layer1.0.conv1.weight"
  int64_t elements = 0;
  double outside_7_bits = 0;  // share, 0..1
};
std::vector<WeightOutliers> weight_outliers(torch::nn::Module& module);

// How linear layers take their activations' int8 range. Calibrated: one range per layer fixed
// from calibration batches (convolutional and MLP models, whose activation ranges hold from
// batch to batch). Per call: each product quantizes its input at that input's own range
// (quantized::linear_dynamic), weights still per output channel. Generative models take the
// latter: one projection sees a whole prompt in the prefill and a single token per decode
// iteration, and transformer activations carry outlier channels whose range moves with the
// token, so no one calibrated range fits (what PyTorch's quantize_dynamic does for them).
enum class LinearActivations { kCalibrated, kPerCall };

class Int8Quantizer {
 public:
  // Candidate layers: the module's 4-D (conv2d) and 2-D (linear, recurrent, embedding)
  // parameters, except those whose module path is in `keep_fp32` (selective quantization).
  // Embedding bags are quantized row-wise in `embedding_bits` (8 or 4). Selects the quantized
  // engine (oneDNN, else x86/FBGEMM); throws Int8Unsupported when none exists.
  explicit Int8Quantizer(torch::nn::Module& module, std::set<std::string> keep_fp32 = {},
                         int embedding_bits = 8,
                         LinearActivations linear_activations = LinearActivations::kCalibrated);
  ~Int8Quantizer();
  Int8Quantizer(const Int8Quantizer&) = delete;
  Int8Quantizer& operator=(const Int8Quantizer&) = delete;

  // Runs `forward` (one or more fp32 forward passes) recording the input and output range of
  // every candidate layer it calls.
  void calibrate(const std::function<void()>& forward);
  // Quantizes the weights of every layer seen in calibration and fixes its activation
  // parameters; from now on, while this object lives, those layers run in int8. Throws
  // Int8Unsupported when calibration saw no candidate layer.
  void quantize();

  QuantizationSummary summary() const;

  // Module paths ("layer1.0.conv1") of the layers calibration saw, in first-call order.
  std::vector<std::string> layer_paths() const;

  struct Layer;  // per candidate weight: name, ranges, packed int8 weight (int8_kernels.h)

 private:
  torch::nn::Module& module_;
  std::map<const void*, std::unique_ptr<Layer>> layers_;  // by weight data pointer
  std::vector<const Layer*> call_order_;
  std::unique_ptr<KernelOverride> override_;
  std::string engine_;
  LinearActivations linear_activations_;
  std::vector<TracedCall> trace_;       // calibration's operator calls, until quantize()
  std::unique_ptr<Int8FlowPlan> plan_;  // which activations stay int8 (int8_dataflow.h)
  void plan_flow();
};

}  // namespace plumb::run
