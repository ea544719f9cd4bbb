// Memory levels the measurement cannot tell apart. sysfs reports the caches of the host, but a
// virtual machine's vCPUs may hold only a small share of a shared last-level cache: on the Intel
// AMX VM the "l3" point (240 MiB of a reported 480 MiB) streamed at DRAM speed. Two roofs that
// are the same roof would make the roofline place operators on a level that does not exist, so
// adjacent levels whose plateaus agree within kIndistinctLevelTolerance are merged into the
// slower one, and the probe says so.
#pragma once

#include <string>
#include <vector>

#include "plumb/platform/bandwidth_kernels.h"

namespace plumb::platform {

// A faster level not faster than the next slower one by more than this fraction is the same
// level: above the run-to-run noise of an idle machine's bandwidth points (a few percent), far
// below a real step between levels (L2 to L3, L3 to DRAM: 1.5x or more on every core measured).
inline constexpr double kIndistinctLevelTolerance = 0.10;

struct LevelMerge {
  std::string level;  // the level that is not really there, e.g. "l3"
  std::string into;   // the slower level it is merged into, e.g. "dram"
  int threads = 0;
  double triad = 0, into_triad = 0;  // bytes/s of the two plateaus
  std::string note;                  // one line for the user
};

// Pure function over summarize_levels' output: per thread count, each level whose triad (read
// where triad was not measured) is at most (1 + tolerance) x the next slower level's is merged
// into that level, or into what that level itself was merged into.
std::vector<LevelMerge> indistinct_levels(const std::vector<LevelBandwidth>& levels);

}  // namespace plumb::platform
