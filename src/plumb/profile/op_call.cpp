// Operator call metadata (see op_call.h).
#include "plumb/profile/op_call.h"

#include <ATen/SparseTensorImpl.h>
#include <ATen/native/quantized/PackedParams.h>
#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>

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

// Stored elements of a sparse COO tensor, read from its impl (ATen's own helper for this,
// at::sparse::get_sparse_impl, is in a header LibTorch 2's wheels do not ship).
int64_t sparse_nnz_of(const at::Tensor& t) {
  return static_cast<const at::SparseTensorImpl*>(t.unsafeGetTensorImpl())->nnz();
}

TensorMeta describe_tensor(const at::Tensor& t) {
  TensorMeta m;
  if (!t.defined()) return m;
  m.dtype = t.scalar_type();
  m.shape = t.sizes().vec();
  if (t.is_sparse()) {
    m.sparse = true;
    // Read from the impl: t._nnz() is a dispatched operator and would re-enter the observer.
    m.sparse_nnz = sparse_nnz_of(t);
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

namespace {

ArgMeta tensor_arg(const at::Tensor& t) {
  ArgMeta a;
  if (!t.defined()) return a;
  a.kind = ArgMeta::Kind::kTensor;
  a.tensors.push_back(describe_tensor(t));
  return a;
}

ArgMeta ints_arg(const std::vector<int64_t>& ints, ArgMeta::Kind kind) {
  ArgMeta a;
  a.kind = kind;
  a.ints = ints;
  return a;
}

// A quantized operator's prepacked weight (quantized::conv2d, quantized::linear) is an opaque
// object; it is described as the arguments it packs, in the order of the float operator's
// schema (weight, bias, then conv2d's stride, padding, dilation, groups), so the same cost
// rules read it. Returns false for any other value.
bool append_packed_weight(const c10::IValue& v, std::vector<ArgMeta>& out) {
  if (!v.isObject()) return false;
  const std::string type = v.type()->str();
  const auto ends_with = [&](const char* suffix) {
    const std::string s(suffix);
    return type.size() >= s.size() && type.compare(type.size() - s.size(), s.size(), s) == 0;
  };
  if (ends_with("Conv2dPackedParamsBase")) {
    const auto packed = v.toCustomClass<ConvPackedParamsBase<2>>();
    const auto [weight, bias] = packed->unpack();
    out.push_back(tensor_arg(weight));
    out.push_back(tensor_arg(bias.has_value() ? *bias : at::Tensor()));
    out.push_back(ints_arg(packed->stride().vec(), ArgMeta::Kind::kIntList));
    out.push_back(ints_arg(packed->padding().vec(), ArgMeta::Kind::kIntList));
    out.push_back(ints_arg(packed->dilation().vec(), ArgMeta::Kind::kIntList));
    out.push_back(ints_arg({packed->groups()}, ArgMeta::Kind::kInt));
    return true;
  }
  if (ends_with("LinearPackedParamsBase")) {
    const auto packed = v.toCustomClass<LinearPackedParamsBase>();
    const auto [weight, bias] = packed->unpack();
    out.push_back(tensor_arg(weight));
    out.push_back(tensor_arg(bias.has_value() ? *bias : at::Tensor()));
    return true;
  }
  return false;
}

}  // namespace

OpCall describe_call(const char* name, c10::ArrayRef<const c10::IValue> inputs,
                     const std::vector<c10::IValue>& outputs) {
  OpCall call;
  call.name = name;
  call.inputs.reserve(inputs.size());
  for (const auto& v : inputs)
    if (!append_packed_weight(v, call.inputs)) call.inputs.push_back(describe_value(v));
  for (const auto& v : outputs) {
    ArgMeta m = describe_value(v);
    for (auto& t : m.tensors) call.outputs.push_back(std::move(t));
  }
  return call;
}

uint64_t hash_mix(uint64_t seed, uint64_t value) {
  // splitmix64's finaliser over seed ^ value: cheap and well mixed.
  uint64_t z = seed ^ (value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t hash_text(const char* text, uint64_t seed) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a
  for (const char* c = text; *c != '\0'; ++c)
    h = (h ^ static_cast<unsigned char>(*c)) * 0x100000001b3ULL;
  return hash_mix(seed, h);
}

namespace {

// Distinct tags keep e.g. an int 3 apart from a one-dimensional tensor of size 3.
enum : uint64_t {
  kTagNone = 1,
  kTagTensor,
  kTagUndefined,
  kTagList,
  kTagInt,
  kTagDouble,
  kTagBool,
  kTagOther
};

uint64_t hash_tensor(const at::Tensor& t, uint64_t h) {
  if (!t.defined()) return hash_mix(h, kTagUndefined);
  h = hash_mix(h, kTagTensor);
  h = hash_mix(h, static_cast<uint64_t>(t.scalar_type()));
  for (int64_t d : t.sizes()) h = hash_mix(h, static_cast<uint64_t>(d));
  h = hash_mix(h, static_cast<uint64_t>(t.dim()));
  if (t.is_sparse()) h = hash_mix(h, static_cast<uint64_t>(sparse_nnz_of(t)));
  return h;
}

uint64_t hash_value(const c10::IValue& v, uint64_t h) {
  if (v.isTensor()) return hash_tensor(v.toTensor(), h);
  if (v.isList()) {
    h = hash_mix(h, kTagList);
    for (const auto& e : v.toListRef()) h = hash_value(e, h);
    return hash_mix(h, v.toListRef().size());
  }
  if (v.isInt()) return hash_mix(hash_mix(h, kTagInt), static_cast<uint64_t>(v.toInt()));
  if (v.isDouble()) {
    const double d = v.toDouble();
    uint64_t bits = 0;
    std::memcpy(&bits, &d, sizeof bits);
    return hash_mix(hash_mix(h, kTagDouble), bits);
  }
  if (v.isBool()) return hash_mix(h, v.toBool() ? kTagBool * 2 : kTagBool);
  if (v.isNone()) return hash_mix(h, kTagNone);
  // Objects (a quantized layer's prepacked weight): by identity, so layers whose activations
  // have the same shape but whose weights differ are not grouped as one signature.
  if (v.isObject())
    return hash_mix(hash_mix(h, kTagOther), reinterpret_cast<uintptr_t>(v.internalToPointer()));
  return hash_mix(h, kTagOther);
}

}  // namespace

uint64_t hash_inputs(c10::ArrayRef<const c10::IValue> inputs, uint64_t seed) {
  uint64_t h = hash_mix(seed, inputs.size());
  for (const auto& v : inputs) h = hash_value(v, h);
  return h;
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
          // Sparse: the number of stored rows sets the cost, so it is part of the key.
          s += t.sparse ? fmt::format("sparse(nnz={})[", t.sparse_nnz) : "[";
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

namespace {

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == sep) {
      parts.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  return parts;
}

int64_t parse_int(const std::string& text, const std::string& whole) {
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || end != text.c_str() + text.size())
    throw std::invalid_argument("not an operator signature (bad integer): " + whole);
  return v;
}

c10::ScalarType parse_scalar_type(const std::string& name, const std::string& whole) {
  for (int i = 0; i < static_cast<int>(c10::ScalarType::NumOptions); ++i) {
    const auto type = static_cast<c10::ScalarType>(i);
    if (name == c10::toString(type)) return type;
  }
  throw std::invalid_argument("not an operator signature (unknown dtype " + name + "): " + whole);
}

// "Float[8,3,224,224]" or "Float sparse(nnz=5)[100,16]" (no space in the real text).
TensorMeta parse_tensor(const std::string& text, const std::string& whole) {
  TensorMeta t;
  if (text == "-") return t;
  const size_t open = text.find('[');
  if (open == std::string::npos || text.back() != ']')
    throw std::invalid_argument("not an operator signature (bad tensor " + text + "): " + whole);
  std::string head = text.substr(0, open);
  const size_t sparse = head.find("sparse(nnz=");
  if (sparse != std::string::npos) {
    t.sparse = true;
    const std::string nnz = head.substr(sparse + 11, head.size() - sparse - 12);
    t.sparse_nnz = parse_int(nnz, whole);
    head.resize(sparse);
  }
  t.dtype = parse_scalar_type(head, whole);
  const std::string dims = text.substr(open + 1, text.size() - open - 2);
  if (!dims.empty())
    for (const auto& d : split(dims, ',')) t.shape.push_back(parse_int(d, whole));
  return t;
}

ArgMeta parse_arg(const std::string& text, const std::string& whole) {
  ArgMeta a;
  if (text.empty()) return a;
  if (text == "T" || text == "F") {
    a.kind = ArgMeta::Kind::kBool;
    a.flag = text == "T";
  } else if (text == "?") {
    a.kind = ArgMeta::Kind::kOther;
  } else if (text[0] == 'i') {
    const std::string list = text.substr(1);
    if (!list.empty())
      for (const auto& v : split(list, ',')) a.ints.push_back(parse_int(v, whole));
    a.kind = a.ints.size() == 1 ? ArgMeta::Kind::kInt : ArgMeta::Kind::kIntList;
  } else if (text[0] == 'd' && text.find('[') == std::string::npos) {
    char* end = nullptr;
    a.real = std::strtod(text.c_str() + 1, &end);
    if (end != text.c_str() + text.size())
      throw std::invalid_argument("not an operator signature (bad number " + text + "): " + whole);
    a.kind = ArgMeta::Kind::kDouble;
  } else {
    for (const auto& t : split(text, ';')) a.tensors.push_back(parse_tensor(t, whole));
    a.kind = a.tensors.size() == 1 ? ArgMeta::Kind::kTensor : ArgMeta::Kind::kTensorList;
  }
  return a;
}

}  // namespace

OpCall parse_signature(const std::string& text) {
  const auto parts = split(text, '|');
  OpCall call;
  call.name = parts.front();
  if (call.name.empty()) throw std::invalid_argument("not an operator signature: " + text);
  for (size_t i = 1; i < parts.size(); ++i) call.inputs.push_back(parse_arg(parts[i], text));
  return call;
}

}  // namespace plumb::profile
