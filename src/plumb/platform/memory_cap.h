// The process's memory ceiling. Linux overcommits: a tensor larger than the machine's memory is
// allocated, and the kernel's OOM killer ends plumb later, without a message, taking a suite's
// remaining workloads with it. Capping the data segment (RLIMIT_DATA) near the memory available
// makes that allocation fail instead, which plumb reports as an out-of-memory run ("try a
// smaller --batch") before going on.
#pragma once

#include <cstdint>
#include <string>

#include "plumb/core/proc_fields.h"

namespace plumb::platform {

// The /proc reader lives in core (the run layer needs it too); platform callers keep its name.
using plumb::proc_kib_field;

// Caps the data segment at what the process uses now plus `headroom_bytes`, unless a lower cap
// is already set (a user's `ulimit -d` is kept). Returns "" on success, else why it could not.
std::string cap_data_segment(int64_t headroom_bytes);

// The cap plumb sets for commands that run models: the memory available now (MemAvailable), or
// an equal share of it for each of `sharers` processes that start together on this machine (a
// data-parallel world's workers here: each sees all of MemAvailable when it starts, and capped
// at all of it, together they could still overcommit the machine).
std::string cap_data_segment_to_available_memory(int sharers = 1);

}  // namespace plumb::platform
