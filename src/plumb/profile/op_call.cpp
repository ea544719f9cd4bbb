// Operator call metadata (see op_call.h).
#include "plumb/profile/op_call.h"

#include <ATen/SparseTensorUtils.h>
#include <fmt/format.h>

namespace plumb::profile {

int64_t TensorMeta::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t TensorMeta::element_size() const {
  return defined() ? static_cast<int64_t>(c10::elementSize(dtype)) : 0;
}

int64_t TensorMeta::bytes() const {
  if (!sparse) return numel() * element_size();
  // COO: nnz rows of values (dense trailing dims) + int64 indices per sparse dim (1 here).
  int64_t row = 1;
  for (size_t i = 1; i < shape.size(); ++i) row *= shape[i];
  return sparse_nnz * row * element_size() + sparse_nnz * 8;
}

const TensorMeta* OpCall::input_tensor(size_t i) const {
  if (i >= inputs.size()) return nullptr;
  const TensorMeta* t = inputs[i].tensor();
  return t != nullptr && t->defined() ? t : nullptr;
}

std::vector<int64_t> OpCall::input_ints(size_t i) const {
  if (i >= inputs.size()) return {};
  const ArgMeta& a = inputs[i];
  return (a.kind == ArgMeta::Kind::kInt || a.kind == ArgMeta::Kind::kIntList)
             ? a.ints
             : std::vector<int64_t>{};
}

namespace {

TensorMeta describe_tensor(const at::Tensor& t) {
  TensorMeta m;
  if (!t.defined()) return m;
  m.dtype = t.scalar_type();
  m.shape = t.sizes().vec();
  if (t.is_sparse()) {
    m.sparse = true;
    // Read from the impl: t._nnz() is a dispatched operator and would re-enter the observer.
    m.sparse_nnz = at::sparse::get_sparse_impl(t)->nnz();
  }
  return m;
}

}  // namespace

ArgMeta describe_value(const c10::IValue& v) {
  ArgMeta a;
  if (v.isTensor()) {
    a.kind = ArgMeta::Kind::kTensor;
    a.tensors.push_back(describe_tensor(v.toTensor()));
  } else if (v.isTensorList()) {
    a.kind = ArgMeta::Kind::kTensorList;
    for (const at::Tensor& t : v.toTensorList().vec()) a.tensors.push_back(describe_tensor(t));
  } else if (v.isBoolList()) {
    // bool[] arguments (convolution_backward's output_mask) as 0/1 integers.
    a.kind = ArgMeta::Kind::kIntList;
    for (bool b : v.toBoolList()) a.ints.push_back(b ? 1 : 0);
  } else if (v.isList()) {
    // Optional-tensor lists (index) and int lists arrive as generic lists.
    auto list = v.toListRef();
    bool all_int = true;
    for (const auto& e : list) all_int = all_int && e.isInt();
    if (all_int) {
      a.kind = ArgMeta::Kind::kIntList;
      for (const auto& e : list) a.ints.push_back(e.toInt());
    } else {
      a.kind = ArgMeta::Kind::kTensorList;
      for (const auto& e : list)
        a.tensors.push_back(e.isTensor() ? describe_tensor(e.toTensor()) : TensorMeta{});
    }
  } else if (v.isInt()) {
    a.kind = ArgMeta::Kind::kInt;
    a.ints.push_back(v.toInt());
  } else if (v.isDouble()) {
    a.kind = ArgMeta::Kind::kDouble;
    a.real = v.toDouble();
  } else if (v.isBool()) {
    a.kind = ArgMeta::Kind::kBool;
    a.flag = v.toBool();
  } else if (!v.isNone()) {
    a.kind = ArgMeta::Kind::kOther;
  }
  return a;
}

OpCall describe_call(const char* name, c10::ArrayRef<const c10::IValue> inputs,
                     const std::vector<c10::IValue>& outputs) {
  OpCall call;
  call.name = name;
  call.inputs.reserve(inputs.size());
  for (const auto& v : inputs) call.inputs.push_back(describe_value(v));
  for (const auto& v : outputs) {
    ArgMeta m = describe_value(v);
    for (auto& t : m.tensors) call.outputs.push_back(std::move(t));
  }
  return call;
}

std::string signature(const OpCall& call) {
  std::string s = call.name;
  for (const auto& a : call.inputs) {
    s += '|';
    switch (a.kind) {
      case ArgMeta::Kind::kTensor:
      case ArgMeta::Kind::kTensorList:
        for (size_t i = 0; i < a.tensors.size(); ++i) {
          const auto& t = a.tensors[i];
          if (i > 0) s += ';';
          if (!t.defined()) {
            s += "-";
            continue;
          }
          s += c10::toString(t.dtype);
          s += t.sparse ? "sparse[" : "[";
          for (size_t d = 0; d < t.shape.size(); ++d)
            s += (d > 0 ? "," : "") + std::to_string(t.shape[d]);
          s += ']';
        }
        break;
      case ArgMeta::Kind::kInt:
      case ArgMeta::Kind::kIntList:
        s += 'i';
        for (size_t i = 0; i < a.ints.size(); ++i)
          s += (i > 0 ? "," : "") + std::to_string(a.ints[i]);
        break;
      case ArgMeta::Kind::kDouble:
        s += fmt::format("d{}", a.real);
        break;
      case ArgMeta::Kind::kBool:
        s += a.flag ? "T" : "F";
        break;
      case ArgMeta::Kind::kOther:
        s += '?';
        break;
      case ArgMeta::Kind::kNone:
        break;
    }
  }
  return s;
}

}  // namespace plumb::profile
