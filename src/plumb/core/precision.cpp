// Names and parsing of precisions and memory formats (see precision.h).
#include "plumb/core/precision.h"

#include <algorithm>

#include "plumb/core/errors.h"
#include "plumb/core/text.h"

namespace plumb {

const char* dtype_name(Dtype dtype) {
  switch (dtype) {
    case Dtype::kFp32:
      return "fp32";
    case Dtype::kBf16:
      return "bf16";
    case Dtype::kFp16:
      return "fp16";
    case Dtype::kInt8:
      return "int8";
  }
  return "fp32";
}

const char* memory_format_name(MemoryFormat format) {
  return format == MemoryFormat::kChannelsLast ? "channels_last" : "contiguous";
}

const std::vector<Dtype>& all_dtypes() {
  static const std::vector<Dtype> dtypes = {Dtype::kFp32, Dtype::kBf16, Dtype::kFp16, Dtype::kInt8};
  return dtypes;
}

int element_bytes(Dtype dtype) {
  switch (dtype) {
    case Dtype::kFp32:
      return 4;
    case Dtype::kBf16:
    case Dtype::kFp16:
      return 2;
    case Dtype::kInt8:
      return 1;
  }
  return 4;
}

Dtype parse_dtype(const std::string& text) {
  for (Dtype d : all_dtypes())
    if (text == dtype_name(d)) return d;
  throw UsageError("unknown dtype '" + text + "'; valid: fp32, bf16, fp16, int8");
}

MemoryFormat parse_memory_format(const std::string& text) {
  if (text == "contiguous") return MemoryFormat::kContiguous;
  if (text == "channels_last") return MemoryFormat::kChannelsLast;
  throw UsageError("unknown memory format '" + text + "'; valid: contiguous, channels_last");
}

std::vector<Dtype> parse_dtype_list(const std::string& text) {
  std::vector<Dtype> out;
  for (const auto& part : split(text, ',')) {
    const Dtype d = parse_dtype(part);
    if (std::find(out.begin(), out.end(), d) != out.end())
      throw UsageError("dtype '" + part + "' is listed twice in '" + text + "'");
    out.push_back(d);
  }
  if (out.empty()) throw UsageError("--dtype needs at least one of fp32, bf16, fp16, int8");
  return out;
}

}  // namespace plumb
