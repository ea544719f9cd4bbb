// Post-training static int8 quantization of any workload's convolutions and linear layers,
// without touching workload code: LibTorch's quantized operators (quantized::conv2d,
// quantized::linear) on the oneDNN quantized engine.
//
// How: the C++ frontend's Conv2d calls aten::conv2d and its Linear calls aten::addmm (2-D
// input) or aten::matmul (more dims) with the weight transposed; recurrent layers call
// aten::lstm_cell / aten::gru_cell and EmbeddingBag aten::embedding_bag. While a quantizer is
// active it registers kernels for those operators on the AutocastCPU dispatch key (the hook CPU
// autocast itself uses; the registration lives only as long as the quantizer, so autocast is
// restored after it). A call whose weight is one of the module's parameters is executed in int8;
// every other call (attention products, plain embeddings) runs in fp32 as before.
//
// Convolutions and linear layers are quantized statically: weights per output channel,
// symmetric qint8; activations per tensor, affine quint8, ranges calibrated on batches from the
// workload's own synthetic data (its real input distribution). Recurrent cells are quantized
// dynamically (quantized::linear_dynamic: the same weights, each product's input range taken
// per call, since the state's range moves with every step). Embedding bags with sum pooling
// are quantized row-wise (8- or 4-bit codes with an fp32 scale and bias per row).
// Each quantized layer quantizes its input and dequantizes its output: layers between them
// (batch norm, activations, residual adds) stay fp32 and are listed in the summary. A fully
// int8 graph (batch norm folded, activations kept quantized between layers) needs the graph,
// which the C++ frontend does not expose; the summary says what that leaves on the table.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace plumb::run {

struct KernelOverride;  // the registered kernels and the autocast state they need

// What a quantized run executed in int8 and what stayed in fp32, for the record.
struct QuantizationSummary {
  std::vector<std::string> quantized;  // "layer1.0.conv1 (conv2d)", in first-call order
  std::vector<std::string> left_fp32;  // "bn1 (BatchNorm2d)", "lstm (LSTM: no int8 kernel used)"
  std::string engine;                  // "onednn"
  size_t static_layers = 0;            // conv/linear with calibrated activation ranges
  size_t dynamic_layers = 0;           // recurrent cells (activation range per call)
  size_t embedding_bags = 0;           // row-wise tables, `embedding_bits` per code
  int embedding_bits = 8;
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

class Int8Quantizer {
 public:
  // Candidate layers: the module's 4-D (conv2d) and 2-D (linear, recurrent, embedding)
  // parameters, except those whose module path is in `keep_fp32` (selective quantization).
  // Embedding bags are quantized row-wise in `embedding_bits` (8 or 4). Selects the quantized
  // engine (oneDNN, else x86/FBGEMM); throws Int8Unsupported when none exists.
  explicit Int8Quantizer(torch::nn::Module& module, std::set<std::string> keep_fp32 = {},
                         int embedding_bits = 8);
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

  struct Layer;  // per candidate weight: name, ranges, packed int8 weight (int8_quantizer.cpp)

 private:
  torch::nn::Module& module_;
  std::map<const void*, std::unique_ptr<Layer>> layers_;  // by weight data pointer
  std::vector<const Layer*> call_order_;
  std::unique_ptr<KernelOverride> override_;
  std::string engine_;
};

}  // namespace plumb::run
