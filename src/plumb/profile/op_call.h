// A lightweight, copyable description of one operator call: its name and the metadata of its
// inputs and outputs (shapes, dtypes, integer/float/bool arguments). The observer records it
// without keeping tensors alive; the cost model computes FLOPs and bytes from it alone.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/ivalue.h>
#include <c10/core/ScalarType.h>

namespace plumb::profile {

struct TensorMeta {
  std::vector<int64_t> shape;
  c10::ScalarType dtype = c10::ScalarType::Undefined;
  bool sparse = false;     // sparse COO gradient (embedding): shape is the dense shape
  int64_t sparse_nnz = 0;  // number of specified rows for sparse tensors

  bool defined() const { return dtype != c10::ScalarType::Undefined; }
  int64_t numel() const;
  int64_t element_size() const;  // bytes per element at the real dtype (fp16 = 2, int8 = 1)
  int64_t bytes() const;         // numel x element size (sparse: values + indices)
};

struct ArgMeta {
  enum class Kind { kNone, kTensor, kTensorList, kInt, kDouble, kBool, kIntList, kOther };
  Kind kind = Kind::kNone;
  std::vector<TensorMeta> tensors;  // kTensor: one; kTensorList: all
  std::vector<int64_t> ints;        // kInt: one; kIntList: all
  double real = 0;                  // kDouble
  bool flag = false;                // kBool

  const TensorMeta* tensor() const { return kind == Kind::kTensor ? &tensors[0] : nullptr; }
};

struct OpCall {
  std::string name;             // "aten::addmm"
  std::vector<ArgMeta> inputs;  // positional, as the operator schema lists them
  std::vector<TensorMeta> outputs;

  // The i-th input tensor's metadata, or nullptr when absent / not a tensor.
  const TensorMeta* input_tensor(size_t i) const;
  // The i-th input as integers (int or int list), empty when absent.
  std::vector<int64_t> input_ints(size_t i) const;
};

// Converts RecordFunction inputs/outputs into metadata (no tensor references kept).
ArgMeta describe_value(const c10::IValue& value);
OpCall describe_call(const char* name, c10::ArrayRef<const c10::IValue> inputs,
                     const std::vector<c10::IValue>& outputs);

// Hashes the metadata signature() reads (name, then dtypes, shapes, sparse nnz, ints, reals,
// flags of every input) straight from the IValues, allocating nothing: calls with the same
// signature get the same hash. The observer groups calls by it on its hot path.
uint64_t hash_text(const char* text, uint64_t seed);
uint64_t hash_inputs(c10::ArrayRef<const c10::IValue> inputs, uint64_t seed);
uint64_t hash_mix(uint64_t seed, uint64_t value);

// Stable text key "name|Float[8,3,224,224]|i2,2|..." grouping calls with identical costs.
std::string signature(const OpCall& call);

// The inverse of signature() for a stored profile row: the call's name and inputs (outputs are
// not part of the key). A one-tensor list reads back as a tensor and a one-int list as an int,
// which the cost rules accept either way. Throws std::invalid_argument on text signature()
// cannot have written.
OpCall parse_signature(const std::string& text);

}  // namespace plumb::profile
