// What glibc's malloc does with the memory a step frees. Timing keeps it in the process, so a
// step never pays the kernel to map and zero pages again; the memory profiler's resident-set
// check hands it back, so the resident set follows the live tensors.
#pragma once

#include <string>
#include <vector>

#include "plumb/core/execution_settings.h"

namespace plumb::run {

// Setting this variable (to anything but "0" or "") leaves glibc's defaults in place for a
// timing run; the run then stores a warning saying so.
inline constexpr char kMallocDefaultsVariable[] = "PLUMB_MALLOC_DEFAULTS";

// Blocks below glibc's largest mmap threshold (32 MiB on 64-bit) come from the heap, and a
// free never shrinks the heap. Why: with glibc's adaptive thresholds, whether the blocks a
// step frees go back to the kernel (to be mapped and zeroed again next step) depends on where
// they happen to lie, so two processes of the same run can differ by a fifth or more. Measured with
// bench/heap_layout.py, autoenc inference batch 100 over 32 heap layouts, twice: with glibc's
// defaults 3 layouts faulted >= 10 pages per step and the slowest ran 1.22-1.30x the fastest;
// with these settings none faulted (docs/benchmarks.md, "Heap layout"). When the settings are
// not applied, appends a warning saying so to `warnings` (the run's stored warnings).
void keep_freed_memory_in_process(std::vector<std::string>& warnings);

// glibc's initial fixed thresholds (128 KiB), and the free heap space handed back now: from
// here on a large block is mapped for itself and unmapped when freed, and the heap's top is
// trimmed, so the resident set follows the live bytes.
void return_freed_memory_to_kernel();

// The timing runner's entry point: keep_freed_memory_in_process for HeapPolicy::kKeep,
// return_freed_memory_to_kernel for kReturn (which then stores a note saying so).
void apply_heap_policy(HeapPolicy heap, std::vector<std::string>& warnings);

}  // namespace plumb::run
