// Shape, byte, argument and dtype helpers shared by the cost rules (see cost_rules.h).
#include <algorithm>

#include "plumb/profile/cost_rules.h"

namespace plumb::profile::cost {

void add_rule(CostTable& table, std::initializer_list<const char*> names, const CostFn& fn) {
  for (const char* name : names) table[std::string("aten::") + name] = fn;
}

OpCost make_cost(double flops, double bytes_read, double bytes_written, double macs) {
  OpCost c;
  c.costed = true;
  c.flops = flops;
  c.macs = macs;
  c.bytes_read = bytes_read;
  c.bytes_written = bytes_written;
  return c;
}

double numel(const Shape& shape) {
  double n = 1;
  for (int64_t d : shape) n *= static_cast<double>(d);
  return n;
}

double element_size(c10::ScalarType dtype) {
  if (dtype == c10::ScalarType::Undefined) return 0;
  return static_cast<double>(c10::elementSize(dtype));
}

double bytes_of(const Shape& shape, c10::ScalarType dtype) {
  return numel(shape) * element_size(dtype);
}

double bytes_of(const TensorMeta* t) {
  return t != nullptr && t->defined() ? static_cast<double>(t->bytes()) : 0.0;
}

double work_elements(const TensorMeta& t) {
  if (!t.sparse) return numel(t.shape);
  // A COO tensor stores nnz rows of its dense trailing dims (one sparse dim, as TensorMeta).
  double row = 1;
  for (size_t i = 1; i < t.shape.size(); ++i) row *= static_cast<double>(t.shape[i]);
  return static_cast<double>(t.sparse_nnz) * row;
}

Shape broadcast(const std::vector<const TensorMeta*>& tensors) {
  size_t rank = 0;
  for (const TensorMeta* t : tensors) rank = std::max(rank, t->shape.size());
  Shape out(rank, 1);
  for (const TensorMeta* t : tensors) {
    const size_t offset = rank - t->shape.size();
    for (size_t i = 0; i < t->shape.size(); ++i) {
      const int64_t d = t->shape[i];
      // Size-1 dims stretch; a 0-size dim wins (the result is empty).
      if (d != 1) out[offset + i] = (out[offset + i] == 1 || d == 0) ? d : out[offset + i];
    }
  }
  return out;
}

int64_t wrap_dim(int64_t dim, size_t rank) {
  const auto r = static_cast<int64_t>(rank);
  if (r == 0) return 0;
  if (dim < 0) dim += r;
  return std::clamp<int64_t>(dim, 0, r - 1);
}

Shape expand_param(const std::vector<int64_t>& values, size_t rank, const Shape& fallback) {
  if (values.empty()) return fallback;
  if (values.size() == 1) return Shape(rank, values[0]);
  Shape out(values.begin(), values.end());
  out.resize(rank, values.back());
  return out;
}

namespace {

std::vector<const TensorMeta*> tensors_in(const OpCall& call, size_t from, size_t to) {
  std::vector<const TensorMeta*> out;
  for (size_t i = from; i < call.inputs.size() && i < to; ++i) {
    const ArgMeta& a = call.inputs[i];
    if (a.kind != ArgMeta::Kind::kTensor && a.kind != ArgMeta::Kind::kTensorList) continue;
    for (const TensorMeta& t : a.tensors)
      if (t.defined()) out.push_back(&t);
  }
  return out;
}

}  // namespace

std::vector<const TensorMeta*> input_tensors(const OpCall& call, size_t arity) {
  return tensors_in(call, 0, arity);
}

std::vector<const TensorMeta*> out_arguments(const OpCall& call, size_t arity) {
  return tensors_in(call, arity, call.inputs.size());
}

std::vector<const TensorMeta*> tensor_list(const OpCall& call, size_t i) {
  std::vector<const TensorMeta*> out;
  if (i >= call.inputs.size()) return out;
  const ArgMeta& a = call.inputs[i];
  if (a.kind != ArgMeta::Kind::kTensor && a.kind != ArgMeta::Kind::kTensorList) return out;
  for (const TensorMeta& t : a.tensors)
    if (t.defined()) out.push_back(&t);
  return out;
}

double all_input_bytes(const OpCall& call, size_t arity) {
  double b = 0;
  for (const TensorMeta* t : input_tensors(call, arity)) b += bytes_of(t);
  return b;
}

std::optional<double> scalar_at(const OpCall& call, size_t i) {
  if (i >= call.inputs.size()) return std::nullopt;
  const ArgMeta& a = call.inputs[i];
  if (a.kind == ArgMeta::Kind::kInt && !a.ints.empty()) return static_cast<double>(a.ints[0]);
  if (a.kind == ArgMeta::Kind::kDouble) return a.real;
  if (a.kind == ArgMeta::Kind::kBool) return a.flag ? 1.0 : 0.0;
  return std::nullopt;
}

LossReduction reduction_at(const OpCall& call, size_t i) {
  return static_cast<LossReduction>(
      static_cast<int64_t>(scalar_at(call, i).value_or(static_cast<double>(LossReduction::kMean))));
}

bool flag_at(const OpCall& call, size_t i, bool fallback) {
  if (i >= call.inputs.size()) return fallback;
  const ArgMeta& a = call.inputs[i];
  if (a.kind == ArgMeta::Kind::kBool) return a.flag;
  if (a.kind == ArgMeta::Kind::kInt && !a.ints.empty()) return a.ints[0] != 0;
  return fallback;
}

bool is_kind(const OpCall& call, size_t i, ArgMeta::Kind kind) {
  return i < call.inputs.size() && call.inputs[i].kind == kind;
}

c10::ScalarType dtype_at(const OpCall& call, size_t i, c10::ScalarType fallback) {
  if (!is_kind(call, i, ArgMeta::Kind::kInt) || call.inputs[i].ints.empty()) return fallback;
  const int64_t v = call.inputs[i].ints[0];
  if (v < 0 || v >= static_cast<int64_t>(c10::ScalarType::NumOptions)) return fallback;
  return static_cast<c10::ScalarType>(v);
}

std::vector<bool> output_mask(const OpCall& call, size_t i) {
  std::vector<bool> mask(3, true);
  if (is_kind(call, i, ArgMeta::Kind::kIntList) && call.inputs[i].ints.size() == 3) {
    for (size_t k = 0; k < 3; ++k) mask[k] = call.inputs[i].ints[k] != 0;
  } else if (call.outputs.size() >= 3) {
    for (size_t k = 0; k < 3; ++k) mask[k] = call.outputs[k].defined();
  }
  return mask;
}

bool has_outputs(const OpCall& call) {
  for (const TensorMeta& t : call.outputs)
    if (t.defined()) return true;
  return false;
}

double recorded_output_bytes(const OpCall& call) {
  double b = 0;
  for (const TensorMeta& t : call.outputs) b += bytes_of(&t);
  return b;
}

double written_bytes(const OpCall& call, double computed) {
  return has_outputs(call) ? recorded_output_bytes(call) : computed;
}

double written_bytes(const OpCall& call, double computed, size_t arity) {
  if (has_outputs(call)) return recorded_output_bytes(call);
  const std::vector<const TensorMeta*> outs = out_arguments(call, arity);
  if (outs.empty()) return computed;
  double b = 0;
  for (const TensorMeta* t : outs) b += bytes_of(t);
  return b;
}

const TensorMeta* recorded_output(const OpCall& call, size_t i) {
  return i < call.outputs.size() && call.outputs[i].defined() ? &call.outputs[i] : nullptr;
}

namespace {

// bool < integral < floating < complex: ATen promotes across categories only upwards.
int category(c10::ScalarType t) {
  if (t == c10::ScalarType::Bool) return 0;
  if (c10::isIntegralType(t, false)) return 1;
  if (c10::isComplexType(t)) return 3;
  return 2;
}

c10::ScalarType promote(c10::ScalarType a, c10::ScalarType b) {
  if (a == c10::ScalarType::Undefined) return b;
  if (b == c10::ScalarType::Undefined) return a;
  // Quantized types only meet themselves; promoteTypes would throw.
  if (c10::isQIntType(a) || c10::isQIntType(b)) return a;
  return c10::promoteTypes(a, b);
}

}  // namespace

c10::ScalarType result_dtype(const OpCall& call) {
  using c10::ScalarType;
  ScalarType dimensioned = ScalarType::Undefined;
  ScalarType zero_dim = ScalarType::Undefined;
  int scalar_category = -1;  // highest category among non-tensor Scalar arguments
  for (const ArgMeta& a : call.inputs) {
    if (a.kind == ArgMeta::Kind::kTensor && a.tensors[0].defined()) {
      const TensorMeta& t = a.tensors[0];
      if (t.shape.empty()) {
        zero_dim = promote(zero_dim, t.dtype);
      } else {
        dimensioned = promote(dimensioned, t.dtype);
      }
    } else if (a.kind == ArgMeta::Kind::kDouble) {
      scalar_category = std::max(scalar_category, 2);
    } else if (a.kind == ArgMeta::Kind::kInt) {
      scalar_category = std::max(scalar_category, 1);
    }
  }
  ScalarType result = dimensioned;
  if (result == ScalarType::Undefined) {
    result = zero_dim;
  } else if (zero_dim != ScalarType::Undefined && category(zero_dim) > category(result)) {
    result = zero_dim;
  }
  if (result == ScalarType::Undefined) return ScalarType::Float;
  if (scalar_category > category(result))
    result = scalar_category == 2 ? ScalarType::Float : ScalarType::Long;
  return result;
}

bool is_floating(c10::ScalarType dtype) {
  return c10::isFloatingType(dtype) || c10::isComplexType(dtype);
}

bool is_in_place(const OpCall& call) {
  return !call.name.empty() && call.name.back() == '_';
}

}  // namespace plumb::profile::cost
