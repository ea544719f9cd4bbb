// Profiling, memory and fused-kernel passes as the store holds them.
#pragma once

#include <cstdint>
#include <string>

#include "plumb/profile/fused_kernels.h"
#include "plumb/profile/memory_profiler.h"
#include "plumb/profile/profiler.h"
#include "plumb/store/run_record.h"

namespace plumb::store {

// The group of the profile and memory passes of a sweep's points: this prefix and the sweep id.
inline constexpr const char* kSweepGroupPrefix = "sweep:";

// A profiling pass as read back from the store (operator rows included).
struct StoredProfile : StoredRecord {
  std::string group;  // shared by the passes of one `plumb profile` call (or one sweep)
  profile::ProfileResult result;
};

// A memory-profiling pass (`plumb memory`, one batch) as read back from the store.
struct StoredMemoryProfile : StoredRecord {
  std::string group;  // shared by the batches of one `plumb memory` call
  profile::MemoryProfileResult result;
};

// A fused-kernel check (plumb analyze fusion) as stored: reused on the same machine for the same
// kind, shapes and threads.
struct StoredFusedKernelCheck {
  int64_t id = 0;
  std::string measured_at;
  std::string machine;  // platform::machine_key()
  profile::FusedKernelCheck check;
};

}  // namespace plumb::store
