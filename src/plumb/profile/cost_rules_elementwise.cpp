// Cost rules for elementwise operators: arithmetic, comparisons, selects, activations and
// their backward formulas, dropout.
//
// FLOPs per output element (a transcendental function - exp, log, tanh, sigmoid, sqrt, erf,
// pow - counts as one operation, like ATen's vectorised kernels execute it: one call):
//   add sub rsub mul div neg abs sign reciprocal remainder maximum minimum   1
//     (add/sub/rsub with alpha != 1: 2, the scaling multiply is real work - SGD's
//      p.add_(g, -lr) is a multiply-add)
//   exp log log1p expm1 sqrt rsqrt sin cos tanh sigmoid erf pow               1
//   eq ne lt gt le ge logical_*                                                1 (comparison)
//   where masked_fill                                                          1 (select)
//   addcmul addcdiv                                         2 (+1 when value != 1)
//   lerp                                                    3 (self + w * (end - self))
//   relu threshold threshold_backward clamp_min clamp_max   1 (compare + select)
//   clamp                                                   1 per bound given
//   hardtanh hardtanh_backward leaky_relu(+_backward)       2
//   sigmoid_backward tanh_backward                          3 (g*(1-y)*y, g*(1-y*y))
//   silu 2 (sigmoid, mul)            silu_backward 6 (g*s*(1 + x*(1-s)) incl. sigmoid)
//   gelu 5 (0.5*x*(1+erf(x/sqrt 2))) gelu_backward 11 (cdf 4 + pdf 4 + x*pdf, add, *g)
//   softplus 5 (beta*x, exp, log1p, /beta, threshold test)   softplus_backward 6
//   elu 4 (compare, exp, sub 1, *alpha)   elu_backward 3
//   hardsigmoid 4 (add, 2 clamps, div)    hardswish 5 (x * hardsigmoid)  backward 3 / 4
//   native_dropout 2 per element in training (mask test, scaled multiply), 0 otherwise;
//   native_dropout_backward 2 (mask multiply, scale)
// Bytes: every input tensor read once (broadcast operands at their own size), the output
// written once. Dense self with a sparse operand (SGD/Adagrad on sparse embedding gradients:
// p.add_(sparse_grad)) does arithmetic on the sparse rows only; in place it reads those rows
// of self and the sparse tensor and writes those rows; out of place (add.out) it reads self,
// the sparse tensor, and writes the whole dense result.
#include <algorithm>

#include "plumb/profile/cost_rules.h"

namespace plumb::profile::cost {

namespace {

enum class OutType {
  kPromoted,  // ATen result_type of the inputs
  kFloat,     // result_type, but integer inputs give float (true division, exp, sqrt ...)
  kBool,      // comparisons
  kSelf,      // the first input's dtype (masked_fill, dropout)
};

c10::ScalarType out_dtype(const OpCall& call, OutType type) {
  const TensorMeta* self = call.input_tensor(0);
  if (is_in_place(call) && self != nullptr) return self->dtype;
  switch (type) {
    case OutType::kBool:
      return c10::ScalarType::Bool;
    case OutType::kSelf:
      if (self != nullptr) return self->dtype;
      break;
    case OutType::kFloat: {
      const c10::ScalarType t = result_dtype(call);
      return is_floating(t) ? t : c10::ScalarType::Float;
    }
    case OutType::kPromoted:
      break;
  }
  return result_dtype(call);
}

// `per_element` FLOPs per output element, plus one when the scalar at `alpha_index` is given
// and differs from 1. `arity`: the position after the last argument that can be an input
// tensor (out= overloads append their output there).
OpCost elementwise(const OpCall& call, double per_element, OutType type, int alpha_index,
                   size_t arity) {
  const std::vector<const TensorMeta*> tensors = input_tensors(call, arity);
  if (tensors.empty()) return {};
  double per = per_element;
  if (alpha_index >= 0 && scalar_at(call, static_cast<size_t>(alpha_index)).value_or(1.0) != 1.0)
    per += 1;
  const TensorMeta* self = call.input_tensor(0);
  const double read_all = all_input_bytes(call, arity);

  // Dense self combined with a sparse operand (SGD/Adagrad on sparse embedding grads): the
  // arithmetic happens on the sparse rows only.
  if (self != nullptr && !self->sparse) {
    for (const TensorMeta* t : tensors) {
      if (!t->sparse) continue;
      const double rows = work_elements(*t);
      const double touched = rows * element_size(self->dtype);
      if (is_in_place(call)) {
        // Reads those rows of self and the other operands, writes those rows.
        return make_cost(per * rows, read_all - bytes_of(self) + touched, touched);
      }
      // Out of place: the dense result is a copy of self plus the sparse rows.
      return make_cost(per * rows, read_all, written_bytes(call, bytes_of(self), arity));
    }
  }

  double n = 0;
  double computed_written = 0;
  if (const TensorMeta* out = recorded_output(call)) {
    n = work_elements(*out);
  } else if (self != nullptr && self->sparse) {
    n = work_elements(*self);  // sparse elementwise ops work on the stored values
    computed_written = bytes_of(self);
  } else if (is_in_place(call) && self != nullptr) {
    n = numel(self->shape);
  } else {
    n = numel(broadcast(tensors));
  }
  if (computed_written == 0) computed_written = n * element_size(out_dtype(call, type));
  return make_cost(per * n, read_all, written_bytes(call, computed_written, arity));
}

CostFn ew(double per_element, size_t arity, OutType type = OutType::kPromoted,
          int alpha_index = -1) {
  return [=](const OpCall& c) { return elementwise(c, per_element, type, alpha_index, arity); };
}

// clamp(self, min?, max?): one comparison per bound that is given.
OpCost clamp(const OpCall& call) {
  double bounds = 0;
  for (size_t i : {size_t{1}, size_t{2}})
    if (i < call.inputs.size() && call.inputs[i].kind != ArgMeta::Kind::kNone &&
        !(call.inputs[i].kind == ArgMeta::Kind::kTensor && call.input_tensor(i) == nullptr))
      bounds += 1;
  return elementwise(call, std::max(bounds, 1.0), OutType::kPromoted, -1, 3);
}

// native_dropout(input, p, train?) -> (output, mask bool).
OpCost native_dropout(const OpCall& call) {
  const TensorMeta* x = call.input_tensor(0);
  if (x == nullptr) return {};
  const bool train = flag_at(call, 2, true);
  const double n = numel(x->shape);
  const double computed = n * element_size(x->dtype) + n * element_size(c10::ScalarType::Bool);
  return make_cost(train ? 2 * n : 0, bytes_of(x), written_bytes(call, computed, 1));
}

}  // namespace

void add_elementwise_rules(CostTable& t) {
  // The second argument of ew() is the arity (see cost_rules.h): 1 for unary ops, 2 for
  // binary ops and (grad, x) backward formulas, 3 for ternary ones.
  add_rule(t, {"add", "add_", "sub", "sub_", "subtract", "subtract_", "rsub"},
           ew(1, 2, OutType::kPromoted, 2));
  add_rule(t, {"mul",        "mul_",        "multiply",     "multiply_",     "remainder",
               "remainder_", "fmod",        "fmod_",        "maximum",       "minimum",
               "fmax",       "fmin",        "floor_divide", "floor_divide_", "bitwise_and",
               "bitwise_or", "bitwise_xor", "pow",          "pow_",          "float_power"},
           ew(1, 2));
  add_rule(t, {"neg",   "neg_",   "negative", "abs",         "abs_",       "sign",
               "sign_", "sgn",    "sgn_",     "floor",       "floor_",     "ceil",
               "ceil_", "round",  "round_",   "trunc",       "trunc_",     "frac",
               "frac_", "square", "square_",  "bitwise_not", "nan_to_num", "nan_to_num_"},
           ew(1, 1));
  add_rule(t,
           {"div", "div_", "divide", "divide_", "true_divide", "true_divide_", "atan2", "atan2_"},
           ew(1, 2, OutType::kFloat));
  add_rule(t, {"reciprocal", "reciprocal_", "exp",  "exp_",  "exp2",   "exp2_",   "expm1",
               "expm1_",     "log",         "log_", "log2",  "log2_",  "log10",   "log10_",
               "log1p",      "log1p_",      "sqrt", "sqrt_", "rsqrt",  "rsqrt_",  "sin",
               "sin_",       "cos",         "cos_", "tan",   "tan_",   "sinh",    "cosh",
               "asin",       "acos",        "atan", "tanh",  "tanh_",  "sigmoid", "sigmoid_",
               "erf",        "erf_",        "erfc", "erfc_", "erfinv", "erfinv_"},
           ew(1, 1, OutType::kFloat));
  add_rule(t,
           {"eq", "eq_", "ne", "ne_", "lt", "lt_", "gt", "gt_", "le", "le_", "ge", "ge_",
            "logical_and", "logical_or", "logical_xor"},
           ew(1, 2, OutType::kBool));
  add_rule(t, {"logical_not", "isnan", "isinf", "isfinite", "signbit"}, ew(1, 1, OutType::kBool));
  add_rule(t, {"where"}, [](const OpCall& c) {
    if (c.inputs.size() == 1) {  // where(condition) is nonzero: reads and writes indices
      const TensorMeta* cond = c.input_tensor(0);
      if (cond == nullptr) return OpCost{};
      return make_cost(0, bytes_of(cond),
                       written_bytes(c, numel(cond->shape) * cond->shape.size() * 8.0));
    }
    return elementwise(c, 1, OutType::kPromoted, -1, 3);
  });
  add_rule(t, {"masked_fill", "masked_fill_"}, ew(1, 3, OutType::kSelf));
  add_rule(t, {"addcmul", "addcmul_", "addcdiv", "addcdiv_"}, ew(2, 3, OutType::kPromoted, 3));
  add_rule(t, {"lerp", "lerp_"}, ew(3, 3));

  add_rule(t, {"relu", "relu_", "threshold", "threshold_"}, ew(1, 1));
  add_rule(t, {"threshold_backward", "clamp_min", "clamp_min_", "clamp_max", "clamp_max_"},
           ew(1, 2));
  add_rule(t, {"clamp", "clamp_", "clip", "clip_"}, clamp);
  add_rule(t, {"hardtanh", "hardtanh_", "leaky_relu", "leaky_relu_"}, ew(2, 1));
  add_rule(t, {"hardtanh_backward", "leaky_relu_backward"}, ew(2, 2));
  add_rule(t, {"sigmoid_backward", "tanh_backward"}, ew(3, 2));
  add_rule(t, {"silu", "silu_"}, ew(2, 1, OutType::kFloat));
  add_rule(t, {"silu_backward"}, ew(6, 2));
  add_rule(t, {"gelu", "gelu_"}, ew(5, 1, OutType::kFloat));
  add_rule(t, {"gelu_backward"}, ew(11, 2));
  add_rule(t, {"softplus"}, ew(5, 1, OutType::kFloat));
  add_rule(t, {"softplus_backward"}, ew(6, 2));
  add_rule(t, {"elu", "elu_"}, ew(4, 1, OutType::kFloat));
  // elu_backward(grad_output, alpha, scale, input_scale, is_result, self_or_result)
  add_rule(t, {"elu_backward"}, ew(3, 6));
  add_rule(t, {"hardsigmoid", "hardsigmoid_"}, ew(4, 1));
  add_rule(t, {"hardswish", "hardswish_"}, ew(5, 1));
  add_rule(t, {"hardsigmoid_backward"}, ew(3, 2));
  add_rule(t, {"hardswish_backward"}, ew(4, 2));
  // quantized::add / add_relu(qa, qb, scale, zero_point), and the out= forms (qa, qb, out): an
  // int8 residual add (and its ReLU) per element of one-byte codes, written at self's type.
  t["quantized::add"] = ew(1, 2, OutType::kSelf);
  t["quantized::add_relu"] = ew(2, 2, OutType::kSelf);
  add_rule(t, {"native_dropout"}, native_dropout);
  add_rule(t, {"native_dropout_backward"}, ew(2, 2, OutType::kSelf));
}

}  // namespace plumb::profile::cost
