// For tests whose figure is the process's resident set or its page faults: they need a heap
// that no earlier test in the same process has left holding large free blocks, because glibc
// serves large requests from those first. Neither ctest (one process per test suite) nor the
// test binary run by hand gives them such a process, so they start one of their own
// (PLUMB_RUN_IN_FRESH_PROCESS, fresh_process.h) and assert that its heap is fresh.
#pragma once

#include <malloc.h>

#include <cstddef>

namespace plumb::testing {

// Bytes glibc holds free in its heaps (mmapped blocks are never held free).
inline size_t free_heap_bytes() {
  return mallinfo2().fordblks;
}

// Beyond this much free heap, an earlier test has left blocks that large requests would reuse
// (measured: 0.06-0.3 MB in a fresh test process, 32-112 MB after a ResNet-50 profile).
inline constexpr size_t kLargeFreeHeap = 16u << 20;

inline bool heap_is_fresh() {
  return free_heap_bytes() < kLargeFreeHeap;
}

inline constexpr char kHeapNotFresh[] =
    "the heap holds large free blocks before the test started: something in the test binary's "
    "start-up freed them";

}  // namespace plumb::testing
