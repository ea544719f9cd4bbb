// Names and parsing of memory formats (see precision.h; dtypes: dtype.cpp).
#include "plumb/core/precision.h"

#include "plumb/core/errors.h"

namespace plumb {

const char* memory_format_name(MemoryFormat format) {
  return format == MemoryFormat::kChannelsLast ? "channels_last" : "contiguous";
}

MemoryFormat parse_memory_format(const std::string& text) {
  if (text == "contiguous") return MemoryFormat::kContiguous;
  if (text == "channels_last") return MemoryFormat::kChannelsLast;
  throw UsageError("unknown memory format '" + text + "'; valid: contiguous, channels_last");
}

}  // namespace plumb
