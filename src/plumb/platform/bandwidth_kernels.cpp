// Bandwidth kernels, the multi-threaded sweep and the per-level summary (see
// bandwidth_kernels.h). Hand-written rather than taken from a library: STREAM and likwid are
// programs, not libraries, and plumb needs the curve in-process to store it with the run.
#include "plumb/platform/bandwidth_kernels.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <stdexcept>
#include <thread>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace plumb::platform {
namespace {

using Clock = std::chrono::steady_clock;

// One thread's arrays for one kernel: dst is written (write, copy, triad) or read (read),
// src0/src1 are read. `bytes` per array, a multiple of 64, every array 64-byte aligned.
struct BwArgs {
  float* dst = nullptr;
  const float* src0 = nullptr;
  const float* src1 = nullptr;
  size_t bytes = 0;
  bool non_temporal = false;
};

using BwFn = void (*)(const BwArgs& x, uint64_t passes, volatile double* sink);

// Tells the compiler every store of the pass is observed, so it cannot drop earlier passes
// as dead (each pass rewrites the same values).
inline void pass_done(const void* p) {
  __asm__ volatile("" : : "r"(p) : "memory");
}

// Portable kernels: the fallback without AVX2 and on other architectures. Eight partial sums
// so that the read is not bound by the latency of one chain of adds.
void read_scalar(const BwArgs& x, uint64_t passes, volatile double* sink) {
  const size_t n = x.bytes / sizeof(float);
  float s[8] = {};
  for (uint64_t p = 0; p < passes; ++p)
    for (size_t i = 0; i < n; i += 8)
      for (int k = 0; k < 8; ++k) s[k] += x.dst[i + k];
  *sink = s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
}
void write_scalar(const BwArgs& x, uint64_t passes, volatile double* sink) {
  const size_t n = x.bytes / sizeof(float);
  for (uint64_t p = 0; p < passes; ++p) {
    for (size_t i = 0; i < n; ++i) x.dst[i] = 1.0f;
    pass_done(x.dst);
  }
  *sink = x.dst[0];
}
void copy_scalar(const BwArgs& x, uint64_t passes, volatile double* sink) {
  const size_t n = x.bytes / sizeof(float);
  for (uint64_t p = 0; p < passes; ++p) {
    for (size_t i = 0; i < n; ++i) x.dst[i] = x.src0[i];
    pass_done(x.dst);
  }
  *sink = x.dst[0];
}
void triad_scalar(const BwArgs& x, uint64_t passes, volatile double* sink) {
  const size_t n = x.bytes / sizeof(float);
  for (uint64_t p = 0; p < passes; ++p) {
    for (size_t i = 0; i < n; ++i) x.dst[i] = x.src0[i] + 0.5f * x.src1[i];
    pass_done(x.dst);
  }
  *sink = x.dst[0];
}

#if defined(__x86_64__)
// The four kernels for one vector ISA, as a macro because GCC cannot parametrise a template
// by target attribute. Loops are unrolled by hand (reads 8x with 8 accumulators to cover add
// latency x 2 units; stores 4x) with a one-vector tail; arrays are whole 64-byte lines.
#define PLUMB_BW_KERNELS(ISA, TARGET, VEC, SETZERO, SET1, LOAD, STORE, STREAM, ADD, FMADD)   \
  __attribute__((target(TARGET))) void read_##ISA(const BwArgs& x, uint64_t passes,          \
                                                  volatile double* sink) {                   \
    constexpr size_t kL = sizeof(VEC) / sizeof(float);                                       \
    const size_t n = x.bytes / sizeof(VEC);                                                  \
    const float* a = x.dst;                                                                  \
    VEC s0 = SETZERO(), s1 = SETZERO(), s2 = SETZERO(), s3 = SETZERO();                      \
    VEC s4 = SETZERO(), s5 = SETZERO(), s6 = SETZERO(), s7 = SETZERO();                      \
    for (uint64_t p = 0; p < passes; ++p) {                                                  \
      size_t i = 0;                                                                          \
      for (; i + 8 <= n; i += 8) {                                                           \
        const float* q = a + i * kL;                                                         \
        s0 = ADD(s0, LOAD(q));                                                               \
        s1 = ADD(s1, LOAD(q + kL));                                                          \
        s2 = ADD(s2, LOAD(q + 2 * kL));                                                      \
        s3 = ADD(s3, LOAD(q + 3 * kL));                                                      \
        s4 = ADD(s4, LOAD(q + 4 * kL));                                                      \
        s5 = ADD(s5, LOAD(q + 5 * kL));                                                      \
        s6 = ADD(s6, LOAD(q + 6 * kL));                                                      \
        s7 = ADD(s7, LOAD(q + 7 * kL));                                                      \
      }                                                                                      \
      for (; i < n; ++i) s0 = ADD(s0, LOAD(a + i * kL));                                     \
    }                                                                                        \
    s0 = ADD(ADD(ADD(s0, s1), ADD(s2, s3)), ADD(ADD(s4, s5), ADD(s6, s7)));                  \
    alignas(64) float lanes[kL];                                                             \
    STORE(lanes, s0);                                                                        \
    *sink = lanes[0];                                                                        \
  }                                                                                          \
  /* dst[i] = value: the store op (STORE or STREAM) is chosen once per pass. */              \
  __attribute__((target(TARGET))) void write_##ISA(const BwArgs& x, uint64_t passes,         \
                                                   volatile double* sink) {                  \
    constexpr size_t kL = sizeof(VEC) / sizeof(float);                                       \
    const size_t n = x.bytes / sizeof(VEC);                                                  \
    float* a = x.dst;                                                                        \
    const VEC v = SET1(1.0f);                                                                \
    for (uint64_t p = 0; p < passes; ++p) {                                                  \
      size_t i = 0;                                                                          \
      if (x.non_temporal) {                                                                  \
        for (; i < n; ++i) STREAM(a + i * kL, v);                                            \
      } else {                                                                               \
        for (; i + 4 <= n; i += 4) {                                                         \
          STORE(a + i * kL, v);                                                              \
          STORE(a + (i + 1) * kL, v);                                                        \
          STORE(a + (i + 2) * kL, v);                                                        \
          STORE(a + (i + 3) * kL, v);                                                        \
        }                                                                                    \
        for (; i < n; ++i) STORE(a + i * kL, v);                                             \
      }                                                                                      \
      pass_done(a);                                                                          \
    }                                                                                        \
    if (x.non_temporal) _mm_sfence();                                                        \
    *sink = a[0];                                                                            \
  }                                                                                          \
  __attribute__((target(TARGET))) void copy_##ISA(const BwArgs& x, uint64_t passes,          \
                                                  volatile double* sink) {                   \
    constexpr size_t kL = sizeof(VEC) / sizeof(float);                                       \
    const size_t n = x.bytes / sizeof(VEC);                                                  \
    float* a = x.dst;                                                                        \
    const float* b = x.src0;                                                                 \
    for (uint64_t p = 0; p < passes; ++p) {                                                  \
      size_t i = 0;                                                                          \
      if (x.non_temporal) {                                                                  \
        for (; i < n; ++i) STREAM(a + i * kL, LOAD(b + i * kL));                             \
      } else {                                                                               \
        for (; i + 4 <= n; i += 4) {                                                         \
          STORE(a + i * kL, LOAD(b + i * kL));                                               \
          STORE(a + (i + 1) * kL, LOAD(b + (i + 1) * kL));                                   \
          STORE(a + (i + 2) * kL, LOAD(b + (i + 2) * kL));                                   \
          STORE(a + (i + 3) * kL, LOAD(b + (i + 3) * kL));                                   \
        }                                                                                    \
        for (; i < n; ++i) STORE(a + i * kL, LOAD(b + i * kL));                              \
      }                                                                                      \
      pass_done(a);                                                                          \
    }                                                                                        \
    if (x.non_temporal) _mm_sfence();                                                        \
    *sink = a[0];                                                                            \
  }                                                                                          \
  /* dst[i] = src0[i] + 0.5 * src1[i] */                                                     \
  __attribute__((target(TARGET))) void triad_##ISA(const BwArgs& x, uint64_t passes,         \
                                                   volatile double* sink) {                  \
    constexpr size_t kL = sizeof(VEC) / sizeof(float);                                       \
    const size_t n = x.bytes / sizeof(VEC);                                                  \
    float* a = x.dst;                                                                        \
    const float *b = x.src0, *c = x.src1;                                                    \
    const VEC s = SET1(0.5f);                                                                \
    for (uint64_t p = 0; p < passes; ++p) {                                                  \
      size_t i = 0;                                                                          \
      if (x.non_temporal) {                                                                  \
        for (; i < n; ++i) STREAM(a + i * kL, FMADD(s, LOAD(c + i * kL), LOAD(b + i * kL))); \
      } else {                                                                               \
        for (; i + 4 <= n; i += 4) {                                                         \
          STORE(a + i * kL, FMADD(s, LOAD(c + i * kL), LOAD(b + i * kL)));                   \
          STORE(a + (i + 1) * kL, FMADD(s, LOAD(c + (i + 1) * kL), LOAD(b + (i + 1) * kL))); \
          STORE(a + (i + 2) * kL, FMADD(s, LOAD(c + (i + 2) * kL), LOAD(b + (i + 2) * kL))); \
          STORE(a + (i + 3) * kL, FMADD(s, LOAD(c + (i + 3) * kL), LOAD(b + (i + 3) * kL))); \
        }                                                                                    \
        for (; i < n; ++i) STORE(a + i * kL, FMADD(s, LOAD(c + i * kL), LOAD(b + i * kL)));  \
      }                                                                                      \
      pass_done(a);                                                                          \
    }                                                                                        \
    if (x.non_temporal) _mm_sfence();                                                        \
    *sink = a[0];                                                                            \
  }

PLUMB_BW_KERNELS(avx512, "avx512f", __m512, _mm512_setzero_ps, _mm512_set1_ps, _mm512_load_ps,
                 _mm512_store_ps, _mm512_stream_ps, _mm512_add_ps, _mm512_fmadd_ps)
PLUMB_BW_KERNELS(avx2, "avx2,fma", __m256, _mm256_setzero_ps, _mm256_set1_ps, _mm256_load_ps,
                 _mm256_store_ps, _mm256_stream_ps, _mm256_add_ps, _mm256_fmadd_ps)
#undef PLUMB_BW_KERNELS
#endif  // __x86_64__

struct KernelSet {
  const char* isa;
  BwFn read, write, copy, triad;
};

KernelSet select_kernels() {
#if defined(__x86_64__)
  CpuFeatures cpu = detect_cpu_features();
  if (cpu.avx512f) return {"avx512", read_avx512, write_avx512, copy_avx512, triad_avx512};
  if (cpu.avx2 && cpu.fma) return {"avx2", read_avx2, write_avx2, copy_avx2, triad_avx2};
#endif
  return {"scalar", read_scalar, write_scalar, copy_scalar, triad_scalar};
}

BwFn kernel_fn(const KernelSet& set, BwKernel k) {
  switch (k) {
    case BwKernel::kRead:
      return set.read;
    case BwKernel::kWrite:
      return set.write;
    case BwKernel::kCopy:
      return set.copy;
    case BwKernel::kTriad:
      return set.triad;
  }
  return set.read;
}

// Reusable barrier for the sweep's worker threads. Spins (the threads are pinned to their own
// CPUs and the waits are microseconds), yielding after a while in case the CPUs are
// oversubscribed.
class SpinBarrier {
 public:
  explicit SpinBarrier(int parties) : parties_(parties) {}
  void wait() {
    int generation = generation_.load(std::memory_order_acquire);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) == parties_ - 1) {
      arrived_.store(0, std::memory_order_relaxed);
      generation_.fetch_add(1, std::memory_order_acq_rel);
      return;
    }
    for (int spins = 0; generation_.load(std::memory_order_acquire) == generation; ++spins)
      if (spins > 10000) std::this_thread::yield();
  }

 private:
  const int parties_;
  std::atomic<int> arrived_{0};
  std::atomic<int> generation_{0};
};

// Padding between a thread's arrays (3 lines, so that the streams do not sit at the same
// offset modulo 4 KiB, which makes loads falsely wait on stores).
constexpr size_t kArrayPad = 192;

struct KernelResult {
  double bytes_per_s = 0;  // 0 where the arrays would be empty
  bool disturbed = false;
};

// Measures every kernel of `opt` at one (working set, threads) pair.
std::vector<KernelResult> measure_working_set(const BwSweepOptions& opt, const KernelSet& set,
                                              int64_t working_set, int threads,
                                              const std::vector<int>& cpus) {
  const size_t per_thread = static_cast<size_t>(working_set / threads);
  struct alignas(64) Slot {  // one cache line per thread: no false sharing while timing
    Clock::time_point start, end;
    double cpu_seconds = -1;
    volatile double sink = 0;
  };
  std::vector<Slot> slots(threads);
  std::vector<KernelResult> result(opt.kernels.size());
  SpinBarrier barrier(threads);
  // Written by thread 0 between barriers, read by all after the next one.
  uint64_t passes = 1;
  bool done = false;
  std::atomic<bool> alloc_failed{false};
  // Best of kRepetitions undisturbed repetitions; a repetition in which another process
  // preempted a thread is retried, up to as many extra times.
  constexpr int kRepetitions = 3;
  const double per_rep = std::max(opt.seconds_per_point / (kRepetitions + 1), 1e-3);

  auto worker = [&](int t) {
    pin_current_thread(cpus[t % cpus.size()]);
    // Own allocation, first touched here: pages land on this thread's NUMA node.
    size_t buffer_bytes = (per_thread + 3 * kArrayPad + 63) / 64 * 64;
    std::unique_ptr<float, decltype(&std::free)> buffer(
        static_cast<float*>(std::aligned_alloc(64, buffer_bytes)), &std::free);
    if (buffer == nullptr) alloc_failed = true;
    barrier.wait();
    if (alloc_failed) return;  // every thread sees it after the barrier
    std::fill_n(buffer.get(), buffer_bytes / sizeof(float), 1.0f);

    for (size_t k = 0; k < opt.kernels.size(); ++k) {
      const int arrays = bw_kernel_arrays(opt.kernels[k]);
      BwArgs args;
      args.bytes = per_thread / arrays / 64 * 64;
      args.non_temporal = opt.non_temporal_stores;
      if (args.bytes == 0) continue;  // same decision on every thread
      char* base = reinterpret_cast<char*>(buffer.get());
      const size_t stride = args.bytes + kArrayPad;
      args.dst = reinterpret_cast<float*>(base);
      args.src0 = reinterpret_cast<const float*>(base + stride);
      args.src1 = reinterpret_cast<const float*>(base + (arrays > 2 ? 2 : 1) * stride);
      const BwFn fn = kernel_fn(set, opt.kernels[k]);
      const double bytes_per_pass = static_cast<double>(args.bytes) * arrays * threads;

      // Calibrate (the first runs also warm the caches), then time the repetitions.
      if (t == 0) {
        passes = 1;
        done = false;
      }
      bool calibrating = true;
      int good = 0, tries = 0;
      double best_disturbed = 0;
      for (;;) {
        barrier.wait();
        const uint64_t my_passes = passes;
        const double cpu0 = thread_cpu_seconds();
        slots[t].start = Clock::now();
        fn(args, my_passes, &slots[t].sink);
        slots[t].end = Clock::now();
        const double cpu1 = thread_cpu_seconds();
        slots[t].cpu_seconds = cpu0 >= 0 && cpu1 >= 0 ? cpu1 - cpu0 : -1;
        barrier.wait();
        if (t == 0) {
          Clock::time_point first = slots[0].start, last = slots[0].end;
          bool disturbed = false;
          double busy = 0;  // the longest CPU time of a thread (wall where unknown)
          for (const Slot& s : slots) {
            first = std::min(first, s.start);
            last = std::max(last, s.end);
            const double own_wall = std::chrono::duration<double>(s.end - s.start).count();
            if (s.cpu_seconds >= 0 && s.cpu_seconds < 0.9 * own_wall) disturbed = true;
            busy =
                std::max(busy, s.cpu_seconds >= 0 ? std::min(s.cpu_seconds, own_wall) : own_wall);
          }
          const double wall = std::chrono::duration<double>(last - first).count();
          if (calibrating) {
            // On CPU time, so that a preempted calibration does not make the repetitions too
            // short to notice the next preemption.
            if (busy >= 1e-3) {
              passes = std::max<uint64_t>(1, static_cast<uint64_t>(my_passes * per_rep / busy));
              calibrating = false;
            } else {
              passes = my_passes * (busy > 0 ? std::clamp(2e-3 / busy, 2.0, 64.0) : 64);
            }
          } else {
            const double rate = wall > 0 ? bytes_per_pass * my_passes / wall : 0;
            if (disturbed) {
              best_disturbed = std::max(best_disturbed, rate);
            } else {
              ++good;
              result[k].bytes_per_s = std::max(result[k].bytes_per_s, rate);
            }
            done = good >= kRepetitions || ++tries >= 2 * kRepetitions;
            if (done && good == 0) result[k] = {best_disturbed, true};
          }
        }
        barrier.wait();
        if (done) break;
      }
      barrier.wait();  // nobody resets `done` before all have seen it
    }
  };

  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(worker, t);
  for (std::thread& th : pool) th.join();
  if (alloc_failed)
    throw std::runtime_error("bandwidth sweep: cannot allocate " + std::to_string(working_set) +
                             " bytes; use smaller working sets");
  return result;
}

}  // namespace

const char* bw_kernel_name(BwKernel kernel) {
  switch (kernel) {
    case BwKernel::kRead:
      return "read";
    case BwKernel::kWrite:
      return "write";
    case BwKernel::kCopy:
      return "copy";
    case BwKernel::kTriad:
      return "triad";
  }
  return "?";
}

int bw_kernel_arrays(BwKernel kernel) {
  switch (kernel) {
    case BwKernel::kRead:
    case BwKernel::kWrite:
      return 1;
    case BwKernel::kCopy:
      return 2;
    case BwKernel::kTriad:
      return 3;
  }
  return 1;
}

std::string bandwidth_isa() {
  return select_kernels().isa;
}

std::vector<BwPoint> sweep_bandwidth(const BwSweepOptions& options) {
  const KernelSet set = select_kernels();
  const std::vector<int> cpus = allowed_cpus();
  std::vector<BwPoint> points;
  for (int64_t ws : options.working_sets) {
    for (int threads : options.threads) {
      if (threads <= 0 || ws <= 0) continue;
      std::vector<KernelResult> bw = measure_working_set(options, set, ws, threads, cpus);
      for (size_t k = 0; k < options.kernels.size(); ++k)
        if (bw[k].bytes_per_s > 0)
          points.push_back({options.kernels[k], threads, ws, bw[k].bytes_per_s, bw[k].disturbed});
    }
  }
  return points;
}

namespace {

// Capacity of a cache level usable by `threads` threads on consecutive CPUs.
int64_t level_capacity(const CacheLevel& c, int threads) {
  int instances =
      c.shared_by_cpus <= 1 ? threads : (threads + c.shared_by_cpus - 1) / c.shared_by_cpus;
  return c.size_bytes * std::max(1, instances);
}

// Data and unified caches, one entry per level (the data cache where a level has both).
std::vector<CacheLevel> data_levels(const std::vector<CacheLevel>& caches) {
  std::map<int, CacheLevel> by_level;
  for (const CacheLevel& c : caches) {
    if (c.size_bytes <= 0 || (c.type != "Data" && c.type != "Unified")) continue;
    auto it = by_level.find(c.level);
    if (it == by_level.end() || c.type == "Data") by_level[c.level] = c;
  }
  std::vector<CacheLevel> out;
  for (const auto& [level, c] : by_level) out.push_back(c);
  return out;
}

constexpr int64_t kKiB = 1024;
constexpr int64_t kQuickDramFloor = 256 * kKiB * kKiB;
// Smallest relative drop taken for a plateau break: above the run-to-run noise of an idle
// machine (~2%), below the steepest step of a gradual transition (Zen 4's L2 -> victim L3
// declines ~15% over an octave, in steps of 3-5% at 4 points per octave).
constexpr double kMinBreakDrop = 0.03;

}  // namespace

std::vector<int64_t> default_working_sets(const std::vector<CacheLevel>& caches, bool thorough,
                                          int max_threads) {
  std::vector<CacheLevel> levels = data_levels(caches);
  const int64_t llc =
      levels.empty() ? 32 * kKiB * kKiB : level_capacity(levels.back(), std::max(1, max_threads));
  // Quick: the DRAM point at 8 x the LLC, but no more than 2.25 x it once that exceeds
  // 256 MiB. A host's 480 MiB LLC would otherwise mean a 3.8 GB point, several seconds of
  // page faults and passes (the quick probe took 17.7 s on such a VM); summarize_levels takes
  // DRAM from >= 2 x the LLC when nothing reaches 4 x.
  const int64_t top =
      thorough ? 8 * llc : std::min(8 * llc, std::max(9 * llc / 4, kQuickDramFloor));
  std::vector<int64_t> sizes;
  if (thorough) {
    // 16 KiB x 2^(k/4), rounded to whole KiB, until the first point >= 8 x LLC.
    for (int k = 0;; ++k) {
      auto size = static_cast<int64_t>(std::llround(16.0 * std::pow(2.0, k / 4.0))) * kKiB;
      sizes.push_back(size);
      if (size >= top) break;
    }
  } else {
    if (levels.empty()) sizes = {16 * kKiB, 512 * kKiB, 16 * kKiB * kKiB};
    for (const CacheLevel& c : levels)
      sizes.push_back(std::max<int64_t>(4 * kKiB, c.size_bytes / 2));
    sizes.push_back(top);
  }
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

std::vector<LevelBandwidth> summarize_levels(const std::vector<BwPoint>& points,
                                             const std::vector<CacheLevel>& caches) {
  std::vector<LevelBandwidth> out;
  const std::vector<CacheLevel> levels = data_levels(caches);
  if (levels.empty()) return out;
  std::vector<int> thread_counts;
  for (const BwPoint& p : points) thread_counts.push_back(p.threads);
  std::sort(thread_counts.begin(), thread_counts.end());
  thread_counts.erase(std::unique(thread_counts.begin(), thread_counts.end()), thread_counts.end());

  // The curve used to find breaks: read, else copy, triad, write (the first one measured).
  BwKernel curve_kernel = BwKernel::kWrite;
  for (BwKernel k : {BwKernel::kRead, BwKernel::kCopy, BwKernel::kTriad}) {
    if (std::any_of(points.begin(), points.end(),
                    [k](const BwPoint& p) { return p.kernel == k; })) {
      curve_kernel = k;
      break;
    }
  }

  const size_t n = levels.size();
  std::vector<std::vector<LevelBandwidth>> per_level(n + 1);  // index n = dram
  for (int threads : thread_counts) {
    std::vector<int64_t> cap(n);
    for (size_t i = 0; i < n; ++i) cap[i] = level_capacity(levels[i], threads);
    // Best per kernel over points at these threads with lo < size <= hi.
    auto plateau = [&](LevelBandwidth& lb, int64_t lo, int64_t hi) {
      // Per kernel (read, write, copy, triad): the best value and where it was measured.
      double best[4] = {0, 0, 0, 0};
      int64_t where[4] = {0, 0, 0, 0};
      for (const BwPoint& p : points) {
        if (p.threads != threads || p.working_set_bytes <= lo || p.working_set_bytes > hi) continue;
        auto k = static_cast<size_t>(p.kernel);
        if (p.bytes_per_s > best[k]) {
          best[k] = p.bytes_per_s;
          where[k] = p.working_set_bytes;
        }
      }
      lb.read = best[0];
      lb.write = best[1];
      lb.copy = best[2];
      lb.triad = best[3];
      for (size_t k : {3, 0, 2, 1})  // triad's size, else read's, copy's, write's
        if (where[k] > 0) {
          lb.working_set_bytes = where[k];
          return true;
        }
      return false;
    };
    // The sorted curve of `curve_kernel` at these threads, without disturbed points.
    std::vector<std::pair<int64_t, double>> curve;
    for (const BwPoint& p : points)
      if (p.threads == threads && p.kernel == curve_kernel && !p.disturbed)
        curve.emplace_back(p.working_set_bytes, p.bytes_per_s);
    std::sort(curve.begin(), curve.end());

    for (size_t i = 0; i <= n; ++i) {
      LevelBandwidth lb;
      lb.threads = threads;
      bool found;
      if (i == n) {
        lb.level = "dram";
        // Well beyond the last level; a sweep that stops short of 4 x it (quick, huge LLC)
        // takes what lies beyond 2 x.
        found = plateau(lb, 4 * cap[n - 1] - 1, INT64_MAX) ||
                plateau(lb, 2 * cap[n - 1] - 1, INT64_MAX);
      } else {
        lb.level = "l" + std::to_string(levels[i].level);
        lb.capacity_bytes = cap[i];
        int64_t below = i == 0 ? 0 : cap[i - 1];
        // Prefer sizes well clear of the faster level; fall back to anything above it.
        found = (below > 0 && plateau(lb, 2 * below - 1, cap[i])) || plateau(lb, below, cap[i]);
        // Break: the largest sustained drop between neighbours at most an octave apart,
        // starting in the window between the geometric midpoints to the adjacent levels.
        // Sustained: the two points after the drop both stay below, and the point before it
        // agrees, so that one disturbed measurement makes neither a dip nor a spike.
        double lo = i == 0 ? 0 : std::sqrt(static_cast<double>(cap[i - 1]) * cap[i]);
        double hi = i + 1 < n ? std::sqrt(static_cast<double>(cap[i]) * cap[i + 1]) : 16.0 * cap[i];
        double best_drop = kMinBreakDrop;
        for (size_t j = 0; j + 1 < curve.size(); ++j) {
          const auto [w0, b0] = curve[j];
          if (w0 < lo || w0 >= hi || curve[j + 1].first > 2 * w0) continue;
          const double before = j > 0 ? std::min(b0, curve[j - 1].second) : b0;
          double after = curve[j + 1].second;
          if (j + 2 < curve.size()) after = std::max(after, curve[j + 2].second);
          if (before <= 0) continue;
          const double drop = 1 - after / before;
          if (drop > best_drop) {
            best_drop = drop;
            lb.plateau_break_bytes = w0;
          }
        }
      }
      if (found) per_level[i].push_back(lb);
    }
  }
  for (auto& level : per_level) out.insert(out.end(), level.begin(), level.end());
  return out;
}

// Measured on the 2-vCPU Zen 4 VM, idle: quick (0.1 s x 4 dtypes x 2 thread counts of peaks,
// 0.05 s x 4 kernels x 4 sizes x 2 thread counts of bandwidth, clock and page faults
// included) 2.7 s; thorough (0.4 s; 0.1 s x 4 kernels x 57 sizes x 2) about 40 s. Preempted
// repetitions are retried, so a busy machine takes up to twice as long.
ProbeBudget quick_budget() {
  return {0.1, 0.05};
}
ProbeBudget thorough_budget() {
  return {0.4, 0.1};
}

}  // namespace plumb::platform
