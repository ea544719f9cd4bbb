// The data-segment cap plumb sets before running models (platform/memory_cap.h): a tensor larger
// than the cap fails its allocation with the error plumb maps to an out-of-memory run, and a
// lower cap set by the user is kept. Each case runs in a child process (the cap is per process).
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <unistd.h>

#include <cmath>
#include <string>

#include <torch/torch.h>

#include "plumb/platform/memory_cap.h"

namespace plumb {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

// Starts a child from the hard limit, so a soft data limit the test runner inherited (a lower
// one is kept by design) cannot decide the case.
bool lift_soft_data_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_DATA, &limit) != 0) return false;
  limit.rlim_cur = limit.rlim_max;
  return setrlimit(RLIMIT_DATA, &limit) == 0;
}

// The soft data limit now, bytes (RLIM_INFINITY when none).
rlim_t soft_data_limit() {
  rlimit limit{};
  getrlimit(RLIMIT_DATA, &limit);
  return limit.rlim_cur;
}

int64_t data_segment_used() {
  return platform::proc_kib_field("/proc/self/status", "VmData");
}

TEST(MemoryCap, ATensorBeyondTheCapFailsItsAllocationInsteadOfBeingKilled) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        if (!lift_soft_data_limit()) _exit(9);
        if (!platform::cap_data_segment(512 * kMiB).empty()) _exit(10);
        try {
          const auto fits = torch::ones({64 * kMiB / 4});  // 64 MiB: under the cap
          if (fits.sum().item<double>() != static_cast<double>(64 * kMiB / 4)) _exit(11);
          torch::empty({int64_t{2} << 30});  // 8 GiB of floats: over it
        } catch (const c10::Error& e) {
          const std::string what = e.what();
          _exit(what.find("can't allocate memory") != std::string::npos ? 3 : 12);
        }
        _exit(13);
      },
      ::testing::ExitedWithCode(3), "");
}

TEST(MemoryCap, ALowerCapAlreadySetIsKept) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        if (!lift_soft_data_limit()) _exit(9);
        const int64_t used = data_segment_used();
        if (used <= 0) _exit(10);
        rlimit limit{};
        getrlimit(RLIMIT_DATA, &limit);
        limit.rlim_cur = static_cast<rlim_t>(used + 256 * kMiB);
        if (setrlimit(RLIMIT_DATA, &limit) != 0) _exit(11);
        if (!platform::cap_data_segment(int64_t{64} << 30).empty()) _exit(12);
        _exit(soft_data_limit() == limit.rlim_cur ? 3 : 13);
      },
      ::testing::ExitedWithCode(3), "");
  EXPECT_GT(platform::proc_kib_field("/proc/meminfo", "MemAvailable"), 0);
  EXPECT_EQ(platform::proc_kib_field("/proc/meminfo", "NoSuchField"), -1);
}

// Workers of one world start together and each sees all of MemAvailable: each is capped at its
// share, so together they stay within it.
TEST(MemoryCap, WorkersStartedTogetherShareTheAvailableMemory) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        if (!lift_soft_data_limit()) _exit(9);
        const int64_t available = platform::proc_kib_field("/proc/meminfo", "MemAvailable");
        if (available <= 0) _exit(10);
        if (!platform::cap_data_segment_to_available_memory(4).empty()) _exit(11);
        const double headroom =
            static_cast<double>(soft_data_limit()) - static_cast<double>(data_segment_used());
        // A quarter of what was available, give or take what moved between the reads.
        _exit(std::abs(headroom - available / 4.0) < available / 16.0 ? 3 : 12);
      },
      ::testing::ExitedWithCode(3), "");
}

}  // namespace
}  // namespace plumb
