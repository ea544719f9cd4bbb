// Which activations of a statically quantized model can stay int8 from one operator to the next.
//
// Requantizing around every layer (quantize the input, dequantize the output) costs more than
// the int8 convolution itself: ResNet-50 at batch 8 spent 29 ms of a 238 ms step in
// quantized::conv2d and most of the rest in the conversions and an fp32 batch norm. A quantized
// graph keeps a convolution's output in int8 when everything that reads it has a quantized
// kernel, folds the batch norm that follows into the convolution's weights and fuses the ReLU
// after it, and adds residuals in int8.
//
// The C++ frontend exposes no graph, so calibration records one: a RecordFunction callback
// notes every top-level operator call of the fp32 calibration passes with the calls that
// produced its tensor arguments (tensor identity, as the operator observer does) and the output
// range of the calls a quantized graph needs ranges for. plan_int8_flow() then decides, for
// every convolution layer, what it absorbs and whether its output may leave it in int8: only
// when no int8 tensor can ever reach an operator without a quantized kernel or leave the
// model. Anything it cannot prove stays as before (dequantized output, fp32 consumers).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace plumb::run {

// What a traced call can do with an int8 input.
enum class FlowOp {
  kConv,         // aten::conv2d (argument 0 the activation, 1 the weight)
  kBatchNorm,    // aten::batch_norm in inference (absorbable into the convolution before it)
  kRelu,         // relu / relu_: a quantized kernel, or fused into what produced its input
  kPassThrough,  // pooling and views with quantized kernels: int8 in, int8 out
  kAdd,          // add / add_ of two tensors, alpha 1: quantized::add
  kLinear,       // linear / matmul / addmm of a quantized layer: int8 input, fp32 output
  kOther,        // anything else: fp32 only
};

FlowOp classify_flow_op(const std::string& name);  // "aten::relu_" -> kRelu

struct TracedCall {
  FlowOp op = FlowOp::kOther;
  std::string name;  // "aten::conv2d"
  // Producer of each tensor argument, by position (-1: not a tensor, or made outside the
  // traced calls: weights, the input batch).
  std::vector<int> producers;
  int data_arg = 0;                 // the activation argument (addmm: 1)
  const void* weight = nullptr;     // conv / linear / batch norm: the weight argument's data
  bool plain = true;                // batch norm in inference, add with alpha 1
  float lo = 0, hi = 0;             // range of output 0 (conv, batch norm, relu, add)
  std::vector<torch::Tensor> norm;  // batch norm: weight, bias, running mean, running var
  double eps = 0;                   // batch norm
};

// Records calls on the current thread while alive (calibration passes only: it boxes every
// operator's inputs and outputs and measures ranges).
class FlowTracer {
 public:
  FlowTracer();
  ~FlowTracer();
  FlowTracer(const FlowTracer&) = delete;
  FlowTracer& operator=(const FlowTracer&) = delete;
  const std::vector<TracedCall>& calls() const;

  struct State;  // the callback's bookkeeping (int8_dataflow.cpp)

 private:
  std::unique_ptr<State> state_;
  uint64_t handle_ = 0;
};

// The plan for one convolution layer (all its calls agree, or it gets no plan).
struct ConvFlow {
  const void* batch_norm = nullptr;  // weight data of the batch norm folded into it (or null)
  int batch_norm_call = -1;          // one traced call of that batch norm (its `norm` to fold)
  bool relu = false;                 // the ReLU after it (or after its batch norm) fused
  bool int8_out = false;             // its output leaves it as an int8 tensor
  float lo = 0, hi = 0;              // range of what it now outputs (after folding and ReLU)
};

// The plan for the residual adds whose first operand is a convolution layer's output.
struct AddFlow {
  bool relu = false;  // the ReLU after it fused (quantized::add_relu)
  float lo = 0, hi = 0;
};

struct Int8FlowPlan {
  std::map<const void*, ConvFlow> convs;  // by convolution weight data
  std::map<const void*, AddFlow> adds;    // by the weight data of the first operand's convolution
};

// `quantizable(weight, op)`: whether the layer with this weight runs in int8 (a prepacked,
// probed convolution or linear layer).
Int8FlowPlan plan_int8_flow(const std::vector<TracedCall>& calls,
                            const std::function<bool(const void*, FlowOp)>& quantizable);

}  // namespace plumb::run
