// The numeric precision and memory format a run executes in: run settings, set once in the run
// descriptor and applied by the runner to any workload (docs/architecture.md: precision is never
// declared per workload). fp32 is the reference every other precision is measured against. The
// precisions themselves are rows of the dtype table (dtype.h).
#pragma once

#include <string>

#include "plumb/core/dtype.h"

namespace plumb {

enum class MemoryFormat { kContiguous, kChannelsLast };

const char* memory_format_name(MemoryFormat format);  // "contiguous", "channels_last"

// Parse user text; throw UsageError naming the valid values.
MemoryFormat parse_memory_format(const std::string& text);

}  // namespace plumb
