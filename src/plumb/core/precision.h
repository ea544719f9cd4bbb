// The numeric precision and memory format a run executes in: run settings, set once in the run
// descriptor and applied by the runner to any workload (DESIGN.md: precision is never declared
// per workload). fp32 is the reference every other precision is measured against.
#pragma once

#include <string>
#include <vector>

namespace plumb {

enum class Dtype { kFp32, kBf16, kFp16, kInt8 };
enum class MemoryFormat { kContiguous, kChannelsLast };

const char* dtype_name(Dtype dtype);                  // "fp32", "bf16", "fp16", "int8"
const char* memory_format_name(MemoryFormat format);  // "contiguous", "channels_last"

// Every dtype plumb knows, in the order lists and tables use.
const std::vector<Dtype>& all_dtypes();

// Parse user text; throw UsageError naming the valid values.
Dtype parse_dtype(const std::string& text);
MemoryFormat parse_memory_format(const std::string& text);
// "fp32,bf16,int8" -> each parsed, duplicates refused.
std::vector<Dtype> parse_dtype_list(const std::string& text);

// Bytes per element of weights and activations stored in this dtype.
int element_bytes(Dtype dtype);

}  // namespace plumb
