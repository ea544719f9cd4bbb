// plumb's numeric types in one table: the name every layer, the store, the probe document and the
// GEMM peaks use for a type, its LibTorch element types, its size, and whether a run may execute
// in it. The platform's peak dtypes and the GEMM table are read from it; stored records parse
// their text back to the enum through it.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <c10/core/ScalarType.h>

namespace plumb {

enum class Dtype { kFp32, kBf16, kFp16, kInt8, kFp64 };

struct DtypeInfo {
  Dtype dtype;
  // The one name: --dtype, stored records, the probe document's keys, GEMM peaks.
  const char* name;
  // Element types a tensor of this dtype has in LibTorch, the usual one first (int8: quantized
  // tensors and plain signed / unsigned bytes; the profiler reports any of them).
  std::vector<c10::ScalarType> scalar_types;
  int element_bytes;   // weights and activations stored in it
  bool floating;       // a floating-point format (int8 is integer with scales)
  bool run_precision;  // a run may execute in it (--dtype); fp64 is a probe peak only
};

// Every row, in the order lists, tables and the probe document use.
const std::vector<DtypeInfo>& dtype_table();
const DtypeInfo& dtype_info(Dtype dtype);

const char* dtype_name(Dtype dtype);  // "fp32", "bf16", "fp16", "int8", "fp64"
int element_bytes(Dtype dtype);       // bytes per element

// The dtypes a run may execute in (fp32, bf16, fp16, int8), in table order.
const std::vector<Dtype>& all_dtypes();

// Any row by its name (stored text, probe keys); nullopt for a name not in the table.
std::optional<Dtype> dtype_from_name(const std::string& name);
// The row whose LibTorch element type is `scalar_type`; nullopt for one without a row (bool,
// complex, int64 ...).
std::optional<Dtype> dtype_of_scalar_type(c10::ScalarType scalar_type);

// User text for a run's precision: throws UsageError naming the valid values.
Dtype parse_dtype(const std::string& text);
// "fp32,bf16,int8" -> each parsed, duplicates refused.
std::vector<Dtype> parse_dtype_list(const std::string& text);

// In JSON a dtype is its name, never the enum's number (stored documents and --json output);
// reading a name not in the table throws.
template <typename Json>
void to_json(Json& j, Dtype dtype) {
  j = dtype_name(dtype);
}
template <typename Json>
void from_json(const Json& j, Dtype& dtype) {
  const auto name = j.template get<std::string>();
  const auto parsed = dtype_from_name(name);
  if (!parsed) throw std::invalid_argument("'" + name + "' is no dtype plumb knows");
  dtype = *parsed;
}

}  // namespace plumb
