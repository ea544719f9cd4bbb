// Reading the kernel's "Key:   1234 kB" lines (/proc/meminfo, /proc/self/status): the memory
// available to a run is needed from the run layer (a model that cannot fit is refused before it
// is built) as well as by the platform's memory cap and the memory profiler.
#pragma once

#include <cstdint>
#include <string>

namespace plumb {

// A "Key:   1234 kB" field of a /proc file, in bytes; -1 when the file or the field is missing.
int64_t proc_kib_field(const char* path, const std::string& key);

// MemAvailable of /proc/meminfo in bytes; -1 when the kernel does not say.
int64_t available_memory_bytes();

}  // namespace plumb
