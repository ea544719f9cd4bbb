// Memory bandwidth per level of the hierarchy: read, write, copy and triad kernels swept over
// working sets from inside L1 to well beyond the last-level cache, at several thread counts;
// the plateaus of that curve become the L1/L2/L3/DRAM roofs of the roofline, and the sizes
// where it drops cross-check the cache sizes sysfs reports. Also the time budgets of the
// quick and thorough `plumb probe` (peaks and bandwidth together).
//
// Byte counting: every array element read once and written once per pass, no write-allocate
// traffic (the convention of STREAM and of likwid-bench):
//   read   s += a[i]           1 x array bytes   (likwid-bench "load")
//   write  a[i] = s            1 x array bytes   (likwid-bench "store")
//   copy   a[i] = b[i]         2 x array bytes   (likwid-bench "copy")
//   triad  a[i] = b[i] + s*c[i] 3 x array bytes  (likwid-bench "stream"; NOT likwid's "triad",
//                                                 which is the 4-stream a = b*c + d)
// Stores are ordinary (cached) by default, like likwid's default kernels, so DRAM write and
// copy figures exclude the hidden write-allocate reads; non-temporal stores are an option.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "plumb/platform/cpu_features.h"

namespace plumb::platform {

enum class BwKernel { kRead, kWrite, kCopy, kTriad };
const char* bw_kernel_name(BwKernel kernel);  // "read", "write", "copy", "triad"
int bw_kernel_arrays(BwKernel kernel);        // arrays touched: 1, 1, 2, 3

struct BwPoint {
  BwKernel kernel = BwKernel::kRead;
  int threads = 0;
  // The requested total over all threads and arrays. Each thread's arrays are rounded down to
  // whole 64-byte lines, so the bytes really touched can be up to 192 x threads smaller;
  // bytes_per_s counts the bytes really moved.
  int64_t working_set_bytes = 0;
  double bytes_per_s = 0;  // all threads together, best undisturbed repetition
  // Every repetition had a thread preempted by another process (its CPU time < 90% of the
  // wall time): bytes_per_s is then only a lower bound. Repetitions are retried before that.
  bool disturbed = false;
};

struct BwSweepOptions {
  std::vector<int64_t> working_sets;  // total bytes over all threads and arrays
  std::vector<int> threads;           // e.g. {1, 2}
  std::vector<BwKernel> kernels = {BwKernel::kRead, BwKernel::kWrite, BwKernel::kCopy,
                                   BwKernel::kTriad};
  double seconds_per_point = 0.05;   // per (working set, threads, kernel)
  bool non_temporal_stores = false;  // streaming stores for write/copy/triad
};

// One point per (working set, threads, kernel), in that nesting order; points whose arrays
// would be under one 64-byte line per thread are skipped. Each thread is pinned to its own
// allowed CPU, allocates and first-touches its own slice (so it lands in its NUMA node), and
// runs its passes concurrently with the others behind a barrier; a point is the best of a few
// repetitions of enough passes to fill the time budget.
std::vector<BwPoint> sweep_bandwidth(const BwSweepOptions& options);

// The vector width the sweep uses here: "avx512", "avx2" or "scalar".
std::string bandwidth_isa();

// Working sets for a sweep. quick: half of each cache level plus 8 x the last-level cache
// (at most 2.25 x it where 8 x would exceed 256 MiB);
// thorough: geometric, 4 points per octave, from 16 KiB to >= 8 x the last-level cache. The
// last-level size is what `max_threads` threads can use (a level shared by k CPUs counts
// once per k threads), so the top point stays beyond all of it. No cache info: 32 MiB LLC.
std::vector<int64_t> default_working_sets(const std::vector<CacheLevel>& caches, bool thorough,
                                          int max_threads = 1);

struct LevelBandwidth {
  std::string level;              // "l1", "l2", "l3", "dram"
  int64_t capacity_bytes = 0;     // what `threads` threads can use of the level; 0 for dram
  int64_t working_set_bytes = 0;  // where the best triad (else the first kernel) was measured
  int threads = 0;
  double read = 0, write = 0, copy = 0, triad = 0;  // bytes/s; 0 = not measured
  int64_t plateau_break_bytes = 0;  // last working set before the curve drops out of this
                                    // level; 0 if no clear drop (or the sweep is too coarse)
};

// Pure function. For each thread count in `points` and each cache level: the best value per
// kernel over working sets that fit the level but not the level below (capacity: the per-CPU
// share of a private level times threads; a level shared by k CPUs counts once per k threads,
// assuming consecutive CPUs share it). Sizes at least twice the level below are preferred,
// so the plateau is not the tail of the faster level. DRAM: see below.
// plateau_break_bytes: the largest sustained relative drop (>= 3%; the two sizes after it
// both below, the size before it not a spike) of the read curve (else another kernel's)
// between consecutive sizes at most an octave apart, searched between the geometric
// midpoints to the neighbouring levels. DRAM: sizes >= 4 x the last level, else >= 2 x.
// Ordered by level, then threads. Empty when `caches` is.
std::vector<LevelBandwidth> summarize_levels(const std::vector<BwPoint>& points,
                                             const std::vector<CacheLevel>& caches);

// Seconds per measured point for `plumb probe`. quick: under ~6 s for instruction peaks of all
// dtypes at 1..2 threads plus 4 kernels x 4 sizes x 1..2 threads on a 2-core machine;
// thorough: under ~90 s for the same with the 4-per-octave sweep. Time grows with the thread
// counts measured.
struct ProbeBudget {
  double peak_seconds_per_point = 0;
  double bw_seconds_per_point = 0;
};
ProbeBudget quick_budget();
ProbeBudget thorough_budget();

}  // namespace plumb::platform
