// The dtype table and the names, sizes and parsing read from it (see dtype.h).
#include "plumb/core/dtype.h"

#include <algorithm>

#include "plumb/core/errors.h"
#include "plumb/core/text.h"

namespace plumb {

const std::vector<DtypeInfo>& dtype_table() {
  using c10::ScalarType;
  static const std::vector<DtypeInfo> table = {
      {Dtype::kFp32, "fp32", {ScalarType::Float}, 4, true, true},
      {Dtype::kFp64, "fp64", {ScalarType::Double}, 8, true, false},
      {Dtype::kBf16, "bf16", {ScalarType::BFloat16}, 2, true, true},
      {Dtype::kFp16, "fp16", {ScalarType::Half}, 2, true, true},
      {Dtype::kInt8,
       "int8",
       {ScalarType::QInt8, ScalarType::QUInt8, ScalarType::Char, ScalarType::Byte},
       1,
       false,
       true},
  };
  return table;
}

const DtypeInfo& dtype_info(Dtype dtype) {
  for (const DtypeInfo& row : dtype_table())
    if (row.dtype == dtype) return row;
  return dtype_table().front();  // unreachable: every enumerator has a row (tested)
}

const char* dtype_name(Dtype dtype) {
  return dtype_info(dtype).name;
}

int element_bytes(Dtype dtype) {
  return dtype_info(dtype).element_bytes;
}

const std::vector<Dtype>& all_dtypes() {
  static const std::vector<Dtype> run_dtypes = [] {
    std::vector<Dtype> out;
    for (const DtypeInfo& row : dtype_table())
      if (row.run_precision) out.push_back(row.dtype);
    return out;
  }();
  return run_dtypes;
}

std::optional<Dtype> dtype_from_name(const std::string& name) {
  for (const DtypeInfo& row : dtype_table())
    if (name == row.name) return row.dtype;
  return std::nullopt;
}

std::optional<Dtype> dtype_of_scalar_type(c10::ScalarType scalar_type) {
  for (const DtypeInfo& row : dtype_table())
    if (std::find(row.scalar_types.begin(), row.scalar_types.end(), scalar_type) !=
        row.scalar_types.end())
      return row.dtype;
  return std::nullopt;
}

namespace {
std::string run_dtype_names() {
  std::vector<std::string> names;
  for (Dtype d : all_dtypes()) names.emplace_back(dtype_name(d));
  return join(names, ", ");
}
}  // namespace

Dtype parse_dtype(const std::string& text) {
  const auto dtype = dtype_from_name(text);
  if (!dtype || !dtype_info(*dtype).run_precision)
    throw UsageError("unknown dtype '" + text + "'; valid: " + run_dtype_names());
  return *dtype;
}

std::vector<Dtype> parse_dtype_list(const std::string& text) {
  std::vector<Dtype> out;
  for (const auto& part : split(text, ',')) {
    const Dtype d = parse_dtype(part);
    if (std::find(out.begin(), out.end(), d) != out.end())
      throw UsageError("dtype '" + part + "' is listed twice in '" + text + "'");
    out.push_back(d);
  }
  if (out.empty()) throw UsageError("--dtype needs at least one of " + run_dtype_names());
  return out;
}

}  // namespace plumb
