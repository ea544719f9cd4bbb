// The glibc malloc settings plumb measures under: timing keeps freed blocks on the heap (no
// mmap for a large block, no trim when it is freed), the resident-set check returns them to
// the kernel, and PLUMB_MALLOC_DEFAULTS leaves glibc alone and says so. Read through
// mallinfo2: `hblkhd` counts mmapped bytes, `arena` the heap's size.
#include <gtest/gtest.h>
#include <malloc.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fake_workload.h"
#include "fresh_heap.h"
#include "fresh_process.h"
#include "plumb/profile/profiler.h"
#include "plumb/run/heap_policy.h"
#include "plumb/run/runner.h"

namespace plumb {
namespace {

// Larger than any threshold glibc's adaptive raising would reach from this test's own frees,
// below the 32 MiB that the timing policy keeps on the heap.
constexpr size_t kBlock = 24u << 20;

// The pointer escapes through a volatile, so the compiler cannot drop the malloc/free pair.
void* volatile g_block = nullptr;

struct HeapChange {
  long long mmapped_while_live = 0;  // growth of mmapped bytes while the block is live
  long long heap_while_live = 0;     // growth of the heap while the block is live
  long long heap_after_free = 0;     // heap size change from live to freed (trim < 0)
};

HeapChange allocate_and_free_a_large_block() {
  const struct mallinfo2 before = mallinfo2();
  g_block = std::malloc(kBlock);
  std::memset(g_block, 1, kBlock);
  const struct mallinfo2 live = mallinfo2();
  std::free(g_block);
  const struct mallinfo2 after = mallinfo2();
  return {static_cast<long long>(live.hblkhd) - static_cast<long long>(before.hblkhd),
          static_cast<long long>(live.arena) - static_cast<long long>(before.arena),
          static_cast<long long>(after.arena) - static_cast<long long>(live.arena)};
}

// Sets PLUMB_MALLOC_DEFAULTS for one scope.
struct MallocDefaultsRequested {
  MallocDefaultsRequested() { setenv(run::kMallocDefaultsVariable, "1", 1); }
  ~MallocDefaultsRequested() { unsetenv(run::kMallocDefaultsVariable); }
};

TEST(HeapPolicy, TimingKeepsFreedBlocksInTheProcess) {
  PLUMB_RUN_IN_FRESH_PROCESS();
  ASSERT_TRUE(testing::heap_is_fresh()) << testing::kHeapNotFresh;
  std::vector<std::string> warnings;
  run::keep_freed_memory_in_process(warnings);
  EXPECT_TRUE(warnings.empty());
  const HeapChange c = allocate_and_free_a_large_block();
  EXPECT_EQ(c.mmapped_while_live, 0);  // carved from the heap, not mapped for itself
  EXPECT_GE(c.heap_while_live, static_cast<long long>(kBlock) - (1 << 20));
  EXPECT_EQ(c.heap_after_free, 0);  // the free did not shrink the heap
}

TEST(HeapPolicy, ResidentSetCheckReturnsFreedBlocksToTheKernel) {
  PLUMB_RUN_IN_FRESH_PROCESS();
  ASSERT_TRUE(testing::heap_is_fresh()) << testing::kHeapNotFresh;
  std::vector<std::string> warnings;
  run::keep_freed_memory_in_process(warnings);
  ASSERT_GE(allocate_and_free_a_large_block().heap_while_live, 0);  // may reuse kept space
  // What a timing run kept is handed back: the heap shrinks to below the block's size.
  const size_t kept_heap = mallinfo2().arena;
  ASSERT_GE(kept_heap, kBlock);
  run::return_freed_memory_to_kernel();
  EXPECT_LT(mallinfo2().arena, kept_heap - kBlock / 2);
  const HeapChange c = allocate_and_free_a_large_block();
  EXPECT_GE(c.mmapped_while_live, static_cast<long long>(kBlock));
  EXPECT_EQ(c.heap_while_live, 0);
}

TEST(HeapPolicy, MallocDefaultsVariableLeavesGlibcAloneAndWarns) {
  PLUMB_RUN_IN_FRESH_PROCESS();
  ASSERT_TRUE(testing::heap_is_fresh()) << testing::kHeapNotFresh;
  run::return_freed_memory_to_kernel();
  MallocDefaultsRequested defaults;
  std::vector<std::string> warnings;
  run::keep_freed_memory_in_process(warnings);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("PLUMB_MALLOC_DEFAULTS is set"), std::string::npos) << warnings[0];
  // Not applied: the large block is still mapped for itself.
  EXPECT_GE(allocate_and_free_a_large_block().mmapped_while_live, static_cast<long long>(kBlock));
}

bool mentions_malloc_defaults(const std::vector<std::string>& warnings) {
  for (const auto& w : warnings)
    if (w.find("PLUMB_MALLOC_DEFAULTS") != std::string::npos) return true;
  return false;
}

// The timing runner and the profiler both apply the policy: a run under the opt-out stores
// the warning, and a run without it applies the settings (a large block stays on the heap).
TEST(HeapPolicy, RunsAndProfilesMeasureUnderThePolicy) {
  using testing::fake_run_options;
  auto w = testing::fake_workload(testing::Behaviour::kSteady);
  {
    MallocDefaultsRequested defaults;
    EXPECT_TRUE(mentions_malloc_defaults(run::run_workload(w, fake_run_options(w)).warnings));
    EXPECT_TRUE(
        mentions_malloc_defaults(profile::profile_workload(w, fake_run_options(w), 1).warnings));
  }
  run::return_freed_memory_to_kernel();
  EXPECT_FALSE(mentions_malloc_defaults(run::run_workload(w, fake_run_options(w)).warnings));
  EXPECT_EQ(allocate_and_free_a_large_block().mmapped_while_live, 0);
  run::return_freed_memory_to_kernel();
  EXPECT_FALSE(
      mentions_malloc_defaults(profile::profile_workload(w, fake_run_options(w), 1).warnings));
  EXPECT_EQ(allocate_and_free_a_large_block().mmapped_while_live, 0);
}

}  // namespace
}  // namespace plumb
