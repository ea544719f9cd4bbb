// Operator name -> category (see op_category.h).
//
// Rules are substrings tried in order, so the more specific ones come first ("addmm" is
// MatMul before "add" is Elementwise; "max_pool" is Pooling before "max" is a Reduction).
// Autograd nodes are named after their forward op ("ConvolutionBackward0"), so they are
// normalised to that op before matching.
#include "plumb/profile/op_category.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <utility>

namespace plumb::profile {
namespace {

struct Rule {
  const char* pattern;
  OpCategory category;
};

// clang-format off
const Rule kRules[] = {
  {"accumulategrad", OpCategory::kOther},  // autograd's gradient hand-off, not model work
  // Random number generation ("normal" must precede "norm", "multinomial" precede "mul").
  {"normal", OpCategory::kOther}, {"uniform", OpCategory::kOther}, {"rand", OpCategory::kOther},
  {"bernoulli", OpCategory::kOther}, {"multinomial", OpCategory::kOther},
  {"masked_fill", OpCategory::kElementwise},  // before the data-movement "fill"
  {"conv", OpCategory::kConv},
  {"lstm", OpCategory::kRecurrent}, {"gru", OpCategory::kRecurrent},
  {"rnn_tanh", OpCategory::kRecurrent}, {"rnn_relu", OpCategory::kRecurrent},
  {"embedding", OpCategory::kEmbedding},
  {"addmm", OpCategory::kMatMul}, {"baddbmm", OpCategory::kMatMul}, {"bmm", OpCategory::kMatMul},
  {"matmul", OpCategory::kMatMul}, {"linear", OpCategory::kMatMul}, {"addmv", OpCategory::kMatMul},
  {"einsum", OpCategory::kMatMul}, {"mm", OpCategory::kMatMul}, {"dot", OpCategory::kMatMul},
  {"mv", OpCategory::kMatMul},
  {"batch_norm", OpCategory::kNormalization}, {"layer_norm", OpCategory::kNormalization},
  {"group_norm", OpCategory::kNormalization}, {"instance_norm", OpCategory::kNormalization},
  {"pool", OpCategory::kPooling},
  {"softmax", OpCategory::kSoftmaxLoss}, {"loss", OpCategory::kSoftmaxLoss},
  {"cross_entropy", OpCategory::kSoftmaxLoss}, {"nll", OpCategory::kSoftmaxLoss},
  {"relu", OpCategory::kActivation}, {"threshold", OpCategory::kActivation},
  {"sigmoid", OpCategory::kActivation}, {"tanh", OpCategory::kActivation},
  {"gelu", OpCategory::kActivation}, {"elu", OpCategory::kActivation},
  {"softplus", OpCategory::kActivation}, {"silu", OpCategory::kActivation},
  {"hardswish", OpCategory::kActivation},
  {"clamp", OpCategory::kElementwise},  // before "min"/"max": clamp_min is not a reduction
  {"norm", OpCategory::kReduction}, {"sum", OpCategory::kReduction}, {"mean", OpCategory::kReduction},
  {"amax", OpCategory::kReduction}, {"amin", OpCategory::kReduction}, {"argmax", OpCategory::kReduction},
  {"max", OpCategory::kReduction}, {"min", OpCategory::kReduction}, {"prod", OpCategory::kReduction},
  {"var", OpCategory::kReduction}, {"std", OpCategory::kReduction}, {"topk", OpCategory::kReduction},
  {"copy", OpCategory::kDataMovement}, {"clone", OpCategory::kDataMovement},
  {"contiguous", OpCategory::kDataMovement}, {"cat", OpCategory::kDataMovement},
  {"stack", OpCategory::kDataMovement}, {"index", OpCategory::kDataMovement},
  {"gather", OpCategory::kDataMovement}, {"scatter", OpCategory::kDataMovement},
  {"transpose", OpCategory::kDataMovement}, {"permute", OpCategory::kDataMovement},
  {"view", OpCategory::kDataMovement}, {"reshape", OpCategory::kDataMovement},
  {"expand", OpCategory::kDataMovement}, {"select", OpCategory::kDataMovement},
  {"slice", OpCategory::kDataMovement}, {"narrow", OpCategory::kDataMovement},
  {"squeeze", OpCategory::kDataMovement}, {"flatten", OpCategory::kDataMovement},
  {"chunk", OpCategory::kDataMovement}, {"split", OpCategory::kDataMovement},
  {"unbind", OpCategory::kDataMovement}, {"_to_copy", OpCategory::kDataMovement},
  {"detach", OpCategory::kDataMovement}, {"as_strided", OpCategory::kDataMovement},
  {"empty", OpCategory::kDataMovement}, {"zeros", OpCategory::kDataMovement},
  {"ones", OpCategory::kDataMovement}, {"full", OpCategory::kDataMovement},
  {"fill", OpCategory::kDataMovement}, {"zero_", OpCategory::kDataMovement},
  {"coalesce", OpCategory::kDataMovement}, {"indices", OpCategory::kDataMovement},
  {"values", OpCategory::kDataMovement}, {"sparse_coo", OpCategory::kDataMovement},
  {"item", OpCategory::kDataMovement}, {"local_scalar", OpCategory::kDataMovement},
  {"resize", OpCategory::kDataMovement}, {"alias", OpCategory::kDataMovement},
  {"t", OpCategory::kDataMovement},  // exact "t" only, see below
  {"add", OpCategory::kElementwise}, {"sub", OpCategory::kElementwise},
  {"mul", OpCategory::kElementwise}, {"div", OpCategory::kElementwise},
  {"exp", OpCategory::kElementwise}, {"log", OpCategory::kElementwise},
  {"pow", OpCategory::kElementwise}, {"sqrt", OpCategory::kElementwise},
  {"neg", OpCategory::kElementwise}, {"abs", OpCategory::kElementwise},
  {"where", OpCategory::kElementwise},
  {"eq", OpCategory::kElementwise}, {"ne", OpCategory::kElementwise},
  {"lt", OpCategory::kElementwise}, {"gt", OpCategory::kElementwise},
  {"le", OpCategory::kElementwise}, {"ge", OpCategory::kElementwise},
  {"reciprocal", OpCategory::kElementwise},
  {"lerp", OpCategory::kElementwise}, {"sign", OpCategory::kElementwise},
  {"square", OpCategory::kElementwise}, {"rsub", OpCategory::kElementwise},
};
// clang-format on

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// "aten::addmm" -> "addmm"; "autograd::engine::evaluate_function: AddmmBackward0" and
// "AddmmBackward0" -> "addmm"; "torch::autograd::AccumulateGrad" -> "accumulategrad".
std::string base_name(const std::string& op) {
  std::string s = op;
  const std::string wrapper = "evaluate_function: ";
  if (auto w = s.find(wrapper); w != std::string::npos) s = s.substr(w + wrapper.size());
  if (auto colon = s.rfind("::"); colon != std::string::npos) s = s.substr(colon + 2);
  if (auto b = s.find("Backward"); b != std::string::npos && b > 0) s = s.substr(0, b);
  return lower(s);
}

}  // namespace

const char* category_name(OpCategory c) {
  switch (c) {
    case OpCategory::kConv:
      return "Conv";
    case OpCategory::kMatMul:
      return "MatMul";
    case OpCategory::kElementwise:
      return "Elementwise";
    case OpCategory::kActivation:
      return "Activation";
    case OpCategory::kNormalization:
      return "Normalization";
    case OpCategory::kPooling:
      return "Pooling";
    case OpCategory::kReduction:
      return "Reduction";
    case OpCategory::kSoftmaxLoss:
      return "Softmax/Loss";
    case OpCategory::kEmbedding:
      return "Embedding";
    case OpCategory::kRecurrent:
      return "Recurrent";
    case OpCategory::kDataMovement:
      return "Data movement";
    case OpCategory::kOptimizer:
      return "Optimizer update";
    case OpCategory::kOther:
      return "Other";
  }
  return "Other";
}

const std::vector<OpCategory>& all_categories() {
  static const std::vector<OpCategory> all = {
      OpCategory::kConv,       OpCategory::kMatMul,        OpCategory::kElementwise,
      OpCategory::kActivation, OpCategory::kNormalization, OpCategory::kPooling,
      OpCategory::kReduction,  OpCategory::kSoftmaxLoss,   OpCategory::kEmbedding,
      OpCategory::kRecurrent,  OpCategory::kDataMovement,  OpCategory::kOptimizer,
      OpCategory::kOther};
  return all;
}

OpCategory categorize(const std::string& op_name) {
  const std::string base = base_name(op_name);
  for (const Rule& rule : kRules) {
    const std::string pattern = rule.pattern;
    // One- and two-letter patterns ("t", "mm", "eq" ...) must match the whole name (after a
    // leading underscore and before a trailing one: "_softmax", "add_"), or they would match
    // inside unrelated names.
    if (pattern.size() <= 2) {
      std::string trimmed = base;
      while (!trimmed.empty() && trimmed.front() == '_') trimmed.erase(0, 1);
      while (!trimmed.empty() && trimmed.back() == '_') trimmed.pop_back();
      if (trimmed == pattern) return rule.category;
      continue;
    }
    if (base.find(pattern) != std::string::npos) return rule.category;
  }
  return OpCategory::kOther;
}

bool output_shape_depends_on_values(const char* op_name) {
  // Exact names: the dispatcher's, as the observer sees them. Reading a scalar (item()) is not
  // here: every training step reads its loss. A value that changes which operators run changes
  // the calls, and that a replayed step notices.
  static const char* const kValueShaped[] = {"aten::nonzero",
                                             "aten::nonzero_numpy",
                                             "aten::argwhere",
                                             "aten::masked_select",
                                             "aten::_unique",
                                             "aten::_unique2",
                                             "aten::unique_dim",
                                             "aten::unique_consecutive",
                                             "aten::unique_dim_consecutive",
                                             "aten::repeat_interleave",
                                             "aten::bincount",
                                             "aten::_pack_padded_sequence",
                                             "torchvision::nms"};
  return std::any_of(std::begin(kValueShaped), std::end(kValueShaped),
                     [&](const char* name) { return std::strcmp(name, op_name) == 0; });
}

}  // namespace plumb::profile
