// Operator categories for breakdowns (Fathom's op-type classes, extended): which kind of work
// an operator is, decided from its name.
#pragma once

#include <string>
#include <vector>

namespace plumb::profile {

enum class OpCategory {
  kConv,
  kMatMul,
  kElementwise,
  kActivation,
  kNormalization,
  kPooling,
  kReduction,
  kSoftmaxLoss,
  kEmbedding,
  kRecurrent,
  kDataMovement,
  kOptimizer,
  kOther,
};

// "Conv", "MatMul", "Elementwise", "Activation", "Normalization", "Pooling", "Reduction",
// "Softmax/Loss", "Embedding", "Recurrent", "Data movement", "Optimizer update", "Other".
const char* category_name(OpCategory category);
const std::vector<OpCategory>& all_categories();

// From an operator name: "aten::convolution_backward" -> kConv, "ConvolutionBackward0" ->
// kConv (autograd nodes by their forward op), "aten::copy_" -> kDataMovement ...
// Ops executed inside the optimizer step are categorised kOptimizer by the observer, from
// their layer scope, not from their name.
OpCategory categorize(const std::string& op_name);

// Whether an operator's output shape depends on the values of its inputs (nonzero, unique,
// masked_select, nms, packing padded sequences by their lengths ...): a model that calls one can
// repeat its calls step after step with different shapes.
bool output_shape_depends_on_values(const char* op_name);

}  // namespace plumb::profile
