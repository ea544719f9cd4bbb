// glibc malloc settings for timing and for resident-set measurement (see heap_policy.h).
#include "plumb/run/heap_policy.h"

#include <malloc.h>

#include <climits>
#include <cstdlib>
#include <string>

#include <fmt/format.h>

namespace plumb::run {
namespace {

// glibc refuses an mmap threshold above HEAP_MAX_SIZE / 2, which is 32 MiB on 64-bit.
constexpr int kLargestMmapThreshold = 32 * 1024 * 1024;
// glibc's initial thresholds, before its adaptive raising.
constexpr int kGlibcInitialThreshold = 128 * 1024;

bool malloc_defaults_requested() {
  const char* text = std::getenv(kMallocDefaultsVariable);
  return text != nullptr && std::string(text) != "" && std::string(text) != "0";
}

}  // namespace

void keep_freed_memory_in_process(std::vector<std::string>& warnings) {
  if (malloc_defaults_requested()) {
    warnings.push_back(fmt::format(
        "{} is set: glibc malloc kept its adaptive thresholds, so freed activations may go "
        "back to the kernel and be faulted in again every step, depending on the heap's layout "
        "(docs/benchmarks.md)",
        kMallocDefaultsVariable));
    return;
  }
  // mallopt returns 1 on success; setting either threshold also stops glibc adapting both.
  const bool mmap_set = mallopt(M_MMAP_THRESHOLD, kLargestMmapThreshold) == 1;
  const bool trim_set = mallopt(M_TRIM_THRESHOLD, INT_MAX) == 1;
  if (!mmap_set || !trim_set)
    warnings.push_back(
        "glibc malloc refused plumb's heap settings (mallopt): freed activations may go back "
        "to the kernel and be faulted in again every step, depending on the heap's layout");
}

void return_freed_memory_to_kernel() {
  mallopt(M_MMAP_THRESHOLD, kGlibcInitialThreshold);
  mallopt(M_TRIM_THRESHOLD, kGlibcInitialThreshold);
  // Free heap space kept by an earlier timing run would otherwise serve large blocks without
  // new pages, hiding them from the resident set: hand it back now.
  malloc_trim(0);
}

void apply_heap_policy(HeapPolicy heap, std::vector<std::string>& warnings) {
  if (heap == HeapPolicy::kKeep) {
    keep_freed_memory_in_process(warnings);
    return;
  }
  return_freed_memory_to_kernel();
  warnings.push_back(
      "--heap return: large freed blocks go back to the kernel and are mapped and zeroed again "
      "when the next step allocates them");
}

}  // namespace plumb::run
