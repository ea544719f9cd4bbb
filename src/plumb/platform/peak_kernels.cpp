// Register-resident instruction-peak kernels and their multi-threaded driver (see
// peak_kernels.h). Each kernel keeps 12-16 independent accumulator chains in vector registers,
// enough to cover FMA latency (4-5 cycles) x 2 units on every current core, so the loop is
// bound by issue throughput, not by latency. The kernels carry their own target attribute and
// are chosen at run time, because plumb is compiled for generic x86-64.
#include "plumb/platform/peak_kernels.h"

#include "plumb/core/errors.h"
#include "plumb/platform/int8_order_kernels.h"
#include "plumb/platform/tile_kernels.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

// avx512_fp16 intrinsics usable in a target("avx512fp16") function without compiling the
// whole file for it: GCC >= 12; clang includes them unconditionally only in later versions.
#if defined(__x86_64__) &&                                                                      \
    (defined(__AVX512FP16__) || (defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12) || \
     (defined(__clang_major__) && __clang_major__ >= 18))
#define PLUMB_HAVE_AVX512FP16_INTRINSICS 1
#else
#define PLUMB_HAVE_AVX512FP16_INTRINSICS 0
#endif

namespace plumb::platform {
namespace {

using Clock = std::chrono::steady_clock;

#define PLUMB_REP12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define PLUMB_REP16(X) PLUMB_REP12(X) X(12) X(13) X(14) X(15)

#if defined(__x86_64__)

// Folds a vector into one double for the sink. Not _mm512_reduce_add_*: those trip GCC 12's
// -Wuninitialized inside its own headers.
__attribute__((target("avx512f"))) double first_and_last(__m512 v) {
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, v);
  return lanes[0] + lanes[15];
}
__attribute__((target("avx512f"))) double first_and_last(__m512d v) {
  alignas(64) double lanes[8];
  _mm512_store_pd(lanes, v);
  return lanes[0] + lanes[7];
}

// acc = acc * 0.999 + 0.001 converges to 1: no overflow, no denormals (which would be slow).

__attribute__((target("avx512f"))) void fp32_avx512(uint64_t iterations, volatile double* sink) {
  const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(0.001f);
#define PLUMB_INIT(i) __m512 acc##i = _mm512_set1_ps(1.0f + (i));
#define PLUMB_STEP(i) acc##i = _mm512_fmadd_ps(acc##i, a, b);
#define PLUMB_FOLD(i) sum = _mm512_add_ps(sum, acc##i);
  PLUMB_REP16(PLUMB_INIT)
  for (uint64_t it = 0; it < iterations; ++it) {
    PLUMB_REP16(PLUMB_STEP)
  }
  __m512 sum = _mm512_setzero_ps();
  PLUMB_REP16(PLUMB_FOLD)
  *sink = first_and_last(sum);
#undef PLUMB_INIT
#undef PLUMB_STEP
#undef PLUMB_FOLD
}

// 12 accumulators: AVX2 has 16 ymm registers and a, b need two.
__attribute__((target("avx2,fma"))) void fp32_avx2(uint64_t iterations, volatile double* sink) {
  const __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(0.001f);
#define PLUMB_INIT(i) __m256 acc##i = _mm256_set1_ps(1.0f + (i));
#define PLUMB_STEP(i) acc##i = _mm256_fmadd_ps(acc##i, a, b);
#define PLUMB_FOLD(i) sum = _mm256_add_ps(sum, acc##i);
  PLUMB_REP12(PLUMB_INIT)
  for (uint64_t it = 0; it < iterations; ++it) {
    PLUMB_REP12(PLUMB_STEP)
  }
  __m256 sum = _mm256_setzero_ps();
  PLUMB_REP12(PLUMB_FOLD)
  float lanes[8];
  _mm256_storeu_ps(lanes, sum);
  *sink = lanes[0] + lanes[7];
#undef PLUMB_INIT
#undef PLUMB_STEP
#undef PLUMB_FOLD
}

// No FMA: a dependent multiply then add per chain (SSE2 is the x86-64 baseline).
void fp32_sse2(uint64_t iterations, volatile double* sink) {
  const __m128 a = _mm_set1_ps(0.999f), b = _mm_set1_ps(0.001f);
#define PLUMB_INIT(i) __m128 acc##i = _mm_set1_ps(1.0f + (i));
#define PLUMB_STEP(i) acc##i = _mm_add_ps(_mm_mul_ps(acc##i, a), b);
#define PLUMB_FOLD(i) sum = _mm_add_ps(sum, acc##i);
  PLUMB_REP12(PLUMB_INIT)
  for (uint64_t it = 0; it < iterations; ++it) {
    PLUMB_REP12(PLUMB_STEP)
  }
  __m128 sum = _mm_setzero_ps();
  PLUMB_REP12(PLUMB_FOLD)
  *sink = _mm_cvtss_f32(sum);
#undef PLUMB_INIT
#undef PLUMB_STEP
#undef PLUMB_FOLD
}

__attribute__((target("avx512f"))) void fp64_avx512(uint64_t iterations, volatile double* sink) {
  const __m512d a = _mm512_set1_pd(0.999), b = _mm512_set1_pd(0.001);
#define PLUMB_INIT(i) __m512d acc##i = _mm512_set1_pd(1.0 + (i));
#define PLUMB_STEP(i) acc##i = _mm512_fmadd_pd(acc##i, a, b);
#define PLUMB_FOLD(i) sum = _mm512_add_pd(sum, acc##i);
  PLUMB_REP16(PLUMB_INIT)
  for (uint64_t it = 0; it < iterations; ++it) {
    PLUMB_REP16(PLUMB_STEP)
  }
  __m512d sum = _mm512_setzero_pd();
  PLUMB_REP16(PLUMB_FOLD)
  *sink = first_and_last(sum);
#undef PLUMB_INIT
#undef PLUMB_STEP
#undef PLUMB_FOLD
}

__attribute__((target("avx2,fma"))) void fp64_avx2(uint64_t iterations, volatile double* sink) {
  const __m256d a = _mm256_set1_pd(0.999), b = _mm256_set1_pd(0.001);
#define PLUMB_INIT(i) __m256d acc##i = _mm256_set1_pd(1.0 + (i));
#define PLUMB_STEP(i) acc##i = _mm256_fmadd_pd(acc##i, a, b);
#define PLUMB_FOLD(i) sum = _mm256_add_pd(sum, acc##i);
  PLUMB_REP12(PLUMB_INIT)
  for (uint64_t it = 0; it < iterations; ++it) {
    PLUMB_REP12(PLUMB_STEP)
  }
  __m256d sum = _mm256_setzero_pd();
  PLUMB_REP12(PLUMB_FOLD)
  double lanes[4];
  _mm256_storeu_pd(lanes, sum);
  *sink = lanes[0] + lanes[3];
#undef PLUMB_INIT
#undef PLUMB_STEP
#undef PLUMB_FOLD
}

void fp64_sse2(uint64_t iterations, volatile double* sink) {
  const __m128d a = _mm_set1_pd(0.999), b = _mm_set1_pd(0.001);
#define PLUMB_INIT(i) __m128d acc##i = _mm_set1_pd(1.0 + (i));
#define PLUMB_STEP(i) acc##i = _mm_add_pd(_mm_mul_pd(acc##i, a), b);
#define PLUMB_FOLD(i) sum = _mm_add_pd(sum, acc##i);
  PLUMB_REP12(PLUMB_INIT)
  for (uint64_t it = 0; it < iterations; ++it) {
    PLUMB_REP12(PLUMB_STEP)
  }
  __m128d sum = _mm_setzero_pd();
  PLUMB_REP12(PLUMB_FOLD)
  *sink = _mm_cvtsd_f64(sum);
#undef PLUMB_INIT
#undef PLUMB_STEP
#undef PLUMB_FOLD
}

// acc += x*y + x*(-y) per lane: the pair products cancel, so the accumulators stay finite
// however long the loop runs, and the hardware still does every multiply and add.
__attribute__((target("avx512f,avx512bf16"))) void bf16_avx512(uint64_t iterations,
                                                               volatile double* sink) {
  const __m512 x = _mm512_set1_ps(1.5f), y = _mm512_set1_ps(0.25f);
  // Lanes alternate (1.5, 1.5) and (0.25, -0.25) within each bf16 pair.
  const __m512bh a = _mm512_cvtne2ps_pbh(x, x);
  const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_sub_ps(_mm512_setzero_ps(), y), y);
#define PLUMB_INIT(i) __m512 acc##i = _mm512_set1_ps(1.0f + (i));
#define PLUMB_STEP(i) acc##i = _mm512_dpbf16_ps(acc##i, a, b);
#define PLUMB_FOLD(i) sum = _mm512_add_ps(sum, acc##i);
  PLUMB_REP16(PLUMB_INIT)
  for (uint64_t it = 0; it < iterations; ++it) {
    PLUMB_REP16(PLUMB_STEP)
  }
  __m512 sum = _mm512_setzero_ps();
  PLUMB_REP16(PLUMB_FOLD)
  *sink = first_and_last(sum);
#undef PLUMB_INIT
#undef PLUMB_STEP
#undef PLUMB_FOLD
}

#if PLUMB_HAVE_AVX512FP16_INTRINSICS
// fp16 constants as bit patterns (0x3BFE = 0.999, 0x1419 = 0.001): avoids relying on
// _Float16 support in the C++ front end.
__attribute__((target("avx512f,avx512fp16"))) void fp16_avx512(uint64_t iterations,
                                                               volatile double* sink) {
  const __m512h a = _mm512_castsi512_ph(_mm512_set1_epi16(0x3BFE));
  const __m512h b = _mm512_castsi512_ph(_mm512_set1_epi16(0x1419));
#define PLUMB_INIT(i) __m512h acc##i = _mm512_castsi512_ph(_mm512_set1_epi16(0x3C00 + (i)));
#define PLUMB_STEP(i) acc##i = _mm512_fmadd_ph(acc##i, a, b);
#define PLUMB_FOLD(i) sum = _mm512_add_ph(sum, acc##i);
  PLUMB_REP16(PLUMB_INIT)
  for (uint64_t it = 0; it < iterations; ++it) {
    PLUMB_REP16(PLUMB_STEP)
  }
  __m512h sum = _mm512_castsi512_ph(_mm512_setzero_si512());
  PLUMB_REP16(PLUMB_FOLD)
  *sink = first_and_last(_mm512_castph_ps(sum));
#undef PLUMB_INIT
#undef PLUMB_STEP
#undef PLUMB_FOLD
}

#endif  // PLUMB_HAVE_AVX512FP16_INTRINSICS

// int32 accumulators wrap around harmlessly (vpdpbusd does not saturate).
__attribute__((target("avx512f,avx512vnni"))) void int8_avx512_vnni(uint64_t iterations,
                                                                    volatile double* sink) {
  const __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(-2);
#define PLUMB_INIT(i) __m512i acc##i = _mm512_set1_epi32(i);
#define PLUMB_STEP(i) acc##i = _mm512_dpbusd_epi32(acc##i, a, b);
#define PLUMB_FOLD(i) sum = _mm512_add_epi32(sum, acc##i);
  PLUMB_REP16(PLUMB_INIT)
  for (uint64_t it = 0; it < iterations; ++it) {
    PLUMB_REP16(PLUMB_STEP)
  }
  __m512i sum = _mm512_setzero_si512();
  PLUMB_REP16(PLUMB_FOLD)
  *sink = first_and_last(_mm512_castsi512_ps(sum));
#undef PLUMB_INIT
#undef PLUMB_STEP
#undef PLUMB_FOLD
}

__attribute__((target("avx2,avxvnni"))) void int8_avx_vnni(uint64_t iterations,
                                                           volatile double* sink) {
  const __m256i a = _mm256_set1_epi8(3), b = _mm256_set1_epi8(-2);
#define PLUMB_INIT(i) __m256i acc##i = _mm256_set1_epi32(i);
#define PLUMB_STEP(i) acc##i = _mm256_dpbusd_avx_epi32(acc##i, a, b);
#define PLUMB_FOLD(i) sum = _mm256_add_epi32(sum, acc##i);
  PLUMB_REP12(PLUMB_INIT)
  for (uint64_t it = 0; it < iterations; ++it) {
    PLUMB_REP12(PLUMB_STEP)
  }
  __m256i sum = _mm256_setzero_si256();
  PLUMB_REP12(PLUMB_FOLD)
  *sink = _mm256_extract_epi32(sum, 0) + _mm256_extract_epi32(sum, 7);
#undef PLUMB_INIT
#undef PLUMB_STEP
#undef PLUMB_FOLD
}

// Without VNNI: vpmaddubsw (u8 x s8 -> pairwise-summed s16), vpmaddwd with ones (-> s32),
// vpaddd into the accumulator; what compilers and oneDNN emit on AVX2. Four chains, each with
// its own u8 operand that an empty asm claims to modify every trip, so the compiler can
// neither hoist the multiplies out of the loop nor share them between chains (four, not
// more, so everything stays in the 16 ymm registers).
__attribute__((target("avx2"))) void int8_avx2(uint64_t iterations, volatile double* sink) {
  const __m256i b = _mm256_set1_epi8(-2), ones = _mm256_set1_epi16(1);
#define PLUMB_INIT(i) __m256i acc##i = _mm256_set1_epi32(i), u##i = _mm256_set1_epi8(3 + (i));
#define PLUMB_STEP(i) \
  acc##i = _mm256_add_epi32(acc##i, _mm256_madd_epi16(_mm256_maddubs_epi16(u##i, b), ones));
#define PLUMB_FOLD(i) sum = _mm256_add_epi32(sum, acc##i);
  PLUMB_INIT(0)
  PLUMB_INIT(1) PLUMB_INIT(2) PLUMB_INIT(3) for (uint64_t it = 0; it < iterations; ++it) {
    __asm__ volatile("" : "+x"(u0), "+x"(u1), "+x"(u2), "+x"(u3));
    PLUMB_STEP(0) PLUMB_STEP(1) PLUMB_STEP(2) PLUMB_STEP(3)
  }
  __m256i sum = _mm256_setzero_si256();
  PLUMB_FOLD(0)
  PLUMB_FOLD(1)
  PLUMB_FOLD(2) PLUMB_FOLD(3)* sink = _mm256_extract_epi32(sum, 0) + _mm256_extract_epi32(sum, 7);
#undef PLUMB_INIT
#undef PLUMB_STEP
#undef PLUMB_FOLD
}

// The core clock while the vector units are busy: per trip 10 x (10 dependent register adds,
// then 8 independent FMAs on zeroed registers), so 100 cycles a trip at 0.8 FMAs per cycle,
// below the issue rate of every core with these instructions (>= 1 per cycle: 512 bits per
// cycle for AVX-512 cores, 256 for AVX2 ones), and the add chain sets the pace. Dense enough
// that a core which lowers its clock for wide FMAs does so here too. Assembly, so that the
// compiler can neither fold the adds nor drop the FMAs.
#define PLUMB_FMA_CLOCK(NAME, REG, ZERO)                                                         \
  void NAME(uint64_t iterations, volatile double* sink) {                                        \
    static_assert(kClockChainCyclesPerIteration == 100, "10 blocks of 10 adds");                 \
    uint64_t acc = 0, one = 1;                                                                   \
    if (iterations == 0) return;                                                                 \
    __asm__ volatile(".irp r,0,1,2,3,4,5,6,7,8,9\n\t" ZERO " %%" REG "\\r, %%" REG "\\r, %%" REG \
                     "\\r\n\t"                                                                   \
                     ".endr\n\t"                                                                 \
                     "1:\n\t"                                                                    \
                     ".rept 10\n\t"                                                              \
                     ".rept 10\n\t"                                                              \
                     "add %[one], %[acc]\n\t"                                                    \
                     ".endr\n\t"                                                                 \
                     ".irp r,2,3,4,5,6,7,8,9\n\t"                                                \
                     "vfmadd231ps %%" REG "0, %%" REG "1, %%" REG                                \
                     "\\r\n\t"                                                                   \
                     ".endr\n\t"                                                                 \
                     ".endr\n\t"                                                                 \
                     "dec %[n]\n\t"                                                              \
                     "jnz 1b\n\t"                                                                \
                     "vzeroupper\n\t"                                                            \
                     : [acc] "+r"(acc), [n] "+r"(iterations)                                     \
                     : [one] "r"(one)                                                            \
                     : "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",     \
                       "xmm8", "xmm9");                                                          \
    *sink = static_cast<double>(acc);                                                            \
  }
PLUMB_FMA_CLOCK(fma_clock_avx512, "zmm", "vpxord")
PLUMB_FMA_CLOCK(fma_clock_avx2, "ymm", "vxorps")
#undef PLUMB_FMA_CLOCK

#endif  // __x86_64__

#undef PLUMB_REP12
#undef PLUMB_REP16

void clock_kernel(uint64_t iterations, volatile double* sink) {
  run_clock_chain(iterations);
  *sink = 0;
}

struct Variant {
  std::string isa;     // "" = unsupported
  std::string reason;  // why unsupported
  PeakKernel kernel = nullptr;
  double ops_per_iteration = 0;  // chains x ops per instruction (header's convention)
  double ops_per_instruction = 0;
  int instruction_bits = 0;  // 0 for tiles
  EngineKind engine = EngineKind::kVector;
  // The clock kernel that keeps the same engine busy (kClockChainCyclesPerIteration cycles a
  // trip); the plain add chain where there is none (SSE2).
  PeakKernel clock = clock_kernel;
};

Variant unsupported(std::string reason) {
  Variant v;
  v.reason = std::move(reason);
  return v;
}

// A vector kernel with `chains` accumulators of `bits`-wide instructions doing `ops_per_lane`
// operations per `lane_bits` lane.
Variant vector_variant(std::string isa, PeakKernel kernel, int chains, int bits, int lane_bits,
                       int ops_per_lane) {
  Variant v;
  v.isa = std::move(isa);
  v.kernel = kernel;
  v.instruction_bits = bits;
  v.ops_per_instruction = static_cast<double>(bits / lane_bits) * ops_per_lane;
  v.ops_per_iteration = chains * v.ops_per_instruction;
#if defined(__x86_64__)
  if (bits == 512) v.clock = fma_clock_avx512;
  if (bits == 256) v.clock = fma_clock_avx2;
#endif
  return v;
}

// The vector sequences an engine on `cpu` runs `dtype` with, each to be timed (the fastest is
// the engine's peak): one, except int8 without VNNI on AVX2, where the three-instruction form
// is timed in oneDNN's order and in plumb's 4-chain loop. One unsupported Variant with the
// reason when there is none.
std::vector<Variant> select_variants(PeakDtype dtype, const CpuFeatures& cpu) {
#if defined(__x86_64__)
  switch (dtype) {
    case PeakDtype::kFp32:
      if (cpu.avx512f) return {vector_variant("avx512 vfmadd231ps", fp32_avx512, 16, 512, 32, 2)};
      if (cpu.avx2 && cpu.fma)
        return {vector_variant("avx2 vfmadd231ps", fp32_avx2, 12, 256, 32, 2)};
      if (cpu.sse2) return {vector_variant("sse2 mulps+addps", fp32_sse2, 12, 128, 32, 2)};
      return {unsupported("no SSE2 on this CPU")};
    case PeakDtype::kFp64:
      if (cpu.avx512f) return {vector_variant("avx512 vfmadd231pd", fp64_avx512, 16, 512, 64, 2)};
      if (cpu.avx2 && cpu.fma)
        return {vector_variant("avx2 vfmadd231pd", fp64_avx2, 12, 256, 64, 2)};
      if (cpu.sse2) return {vector_variant("sse2 mulpd+addpd", fp64_sse2, 12, 128, 64, 2)};
      return {unsupported("no SSE2 on this CPU")};
    case PeakDtype::kBf16:
      if (cpu.avx512_bf16)
        return {vector_variant("avx512_bf16 vdpbf16ps", bf16_avx512, 16, 512, 32, 4)};
      return {unsupported("no avx512_bf16 on this CPU")};
    case PeakDtype::kFp16:
      if (!cpu.avx512_fp16) return {unsupported("no avx512_fp16 on this CPU")};
#if PLUMB_HAVE_AVX512FP16_INTRINSICS
      return {vector_variant("avx512_fp16 vfmadd231ph", fp16_avx512, 16, 512, 16, 2)};
#else
      return {unsupported("plumb was built by a compiler without avx512_fp16 intrinsics")};
#endif
    case PeakDtype::kInt8:
      if (cpu.avx512_vnni)
        return {vector_variant("avx512_vnni vpdpbusd", int8_avx512_vnni, 16, 512, 32, 8)};
      if (cpu.avx_vnni) return {vector_variant("avx_vnni vpdpbusd", int8_avx_vnni, 12, 256, 32, 8)};
      // Three instructions do one vpdpbusd's work: counted as one instruction-equivalent.
      // oneDNN's avx512_core kernels run them on zmm registers where the CPU has AVX-512BW.
      if (cpu.avx512f && cpu.avx512bw)
        return {vector_variant("avx512bw vpmaddubsw+vpmaddwd+vpaddd (oneDNN's order)",
                               int8_avx512bw_onednn, 16, 512, 32, 8)};
      if (cpu.avx2)
        return {vector_variant("avx2 vpmaddubsw+vpmaddwd+vpaddd (oneDNN's order)", int8_avx2_onednn,
                               8, 256, 32, 8),
                vector_variant("avx2 vpmaddubsw+vpmaddwd+vpaddd (4-chain loop)", int8_avx2, 4, 256,
                               32, 8)};
      return {unsupported("no avx512_vnni, avx_vnni, avx512bw or avx2 on this CPU")};
  }
  return {unsupported("unknown dtype")};
#else
  (void)dtype;
  (void)cpu;
  return {unsupported("no instruction-peak kernels for this architecture (x86-64 only)")};
#endif
}

Variant select_matrix_variant(PeakDtype dtype, const CpuFeatures& cpu) {
  std::string reason;
  Variant v;
  v.engine = EngineKind::kMatrix;
  if (!amx_usable(cpu, dtype, &reason)) {
    v.reason = reason;
    return v;
  }
  v.isa = dtype == PeakDtype::kBf16 ? "amx tdpbf16ps" : "amx tdpbusd";
  v.kernel = tile_peak_kernel(dtype);
  v.clock = tile_clock_kernel(dtype);
  v.ops_per_instruction = tile_ops_per_instruction(dtype);
  v.ops_per_iteration = 6 * v.ops_per_instruction;  // six accumulator tiles per trip
  return v;
}

struct RunResult {
  double wall = 0;         // first start to last finish
  double slowest = 0;      // the longest start-to-finish of one thread
  double busy = 0;         // the longest CPU time of a thread (wall where unknown)
  bool disturbed = false;  // some thread was preempted (see thread_cpu_seconds)
};

// One timed concurrent run: `threads` pinned threads each run `warmup_iterations` untimed trips,
// then `iterations` timed ones, released together. The warm-up puts the core into the clock
// state the kernel's instructions lead to before the clock starts: a core that lowers its clock
// for wide vectors or tiles does so some hundreds of microseconds into the load, and a short
// timed run would otherwise average the two clocks.
RunResult run_concurrent(PeakKernel kernel, int threads, uint64_t iterations,
                         const std::vector<int>& cpus, uint64_t warmup_iterations = 0) {
  struct alignas(64) Slot {  // one cache line per thread: no false sharing while timing
    Clock::time_point start, end;
    double cpu_seconds = -1;
    volatile double sink = 0;
  };
  std::vector<Slot> slots(threads);
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      pin_current_thread(cpus[t % cpus.size()]);
      if (warmup_iterations > 0) kernel(warmup_iterations, &slots[t].sink);
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) {
      }
      double cpu0 = thread_cpu_seconds();
      slots[t].start = Clock::now();
      kernel(iterations, &slots[t].sink);
      slots[t].end = Clock::now();
      double cpu1 = thread_cpu_seconds();
      if (cpu0 >= 0 && cpu1 >= 0) slots[t].cpu_seconds = cpu1 - cpu0;
    });
  }
  while (ready.load() < threads) std::this_thread::yield();
  go.store(true, std::memory_order_release);
  for (std::thread& th : pool) th.join();
  RunResult run;
  Clock::time_point first = slots[0].start, last = slots[0].end;
  for (const Slot& s : slots) {
    first = std::min(first, s.start);
    last = std::max(last, s.end);
    double wall = std::chrono::duration<double>(s.end - s.start).count();
    if (s.cpu_seconds >= 0 && s.cpu_seconds < 0.9 * wall) run.disturbed = true;
    run.busy = std::max(run.busy, s.cpu_seconds >= 0 ? std::min(s.cpu_seconds, wall) : wall);
    run.slowest = std::max(run.slowest, wall);
  }
  run.wall = std::chrono::duration<double>(last - first).count();
  return run;
}

// The core clock while `threads` threads are busy at once (the all-core boost clock is often
// lower than the one-core one): every thread runs `iterations` of the add chain after as many
// warm-up trips; the clock of the slowest thread, best of `runs` undisturbed runs. 0 if none was
// undisturbed.
double concurrent_clock_hz(PeakKernel clock, int threads, uint64_t iterations,
                           const std::vector<int>& cpus, int runs = 3) {
  double best = 0;
  for (int tries = 0, good = 0; good < runs && tries < 2 * runs; ++tries) {
    RunResult run = run_concurrent(clock, threads, iterations, cpus, iterations);
    if (run.disturbed || run.slowest <= 0) continue;
    ++good;
    best = std::max(best,
                    static_cast<double>(iterations) * kClockChainCyclesPerIteration / run.slowest);
  }
  return best;
}

// One engine being measured: its kernel, calibration and the points filled in round by round.
struct EngineRun {
  Variant v;
  InstructionPeak peak;
  double trips_per_s = 0;  // one thread's trips per second, updated from each good run
  std::vector<int> good;   // undisturbed repetitions per thread count
  std::vector<double> best_disturbed;
};

EngineRun start_engine(PeakDtype dtype, const Variant& v, int max_threads,
                       const std::vector<int>& cpus) {
  EngineRun e;
  e.v = v;
  e.peak.dtype = peak_dtype_name(dtype);
  e.peak.engine = v.engine;
  if (v.kernel == nullptr) {
    e.peak.unsupported_reason = v.reason;
    return e;
  }
  e.peak.supported = true;
  e.peak.isa = v.isa;
  e.peak.ops_per_instruction = v.ops_per_instruction;
  e.peak.instruction_bits = v.instruction_bits;
  // Calibrate on one thread until a run lasts >= 2 ms; this also warms the vector units up
  // (some Intel cores run wide vectors slower for their first ~10 us). CPU time, not wall
  // time, so that a preempted calibration does not make the timed runs too short to notice
  // the next preemption.
  uint64_t iterations = 1000;
  double t = run_concurrent(v.kernel, 1, iterations, cpus).busy;
  while (t < 2e-3) {
    iterations *= 4;
    t = run_concurrent(v.kernel, 1, iterations, cpus).busy;
  }
  e.trips_per_s = static_cast<double>(iterations) / t;
  for (int threads = 1; threads <= max_threads; ++threads) {
    PeakPoint point;
    point.threads = threads;
    e.peak.by_threads.push_back(point);
  }
  e.good.assign(max_threads, 0);
  e.best_disturbed.assign(max_threads, 0);
  return e;
}

// One repetition of one engine at one thread count (retried once when another process
// preempted a thread), bracketed by clock measurements under the same engine's load: the best
// repetition keeps the higher of the clocks measured just before and just after it, since a
// VM's host moves the core between clock states (the Xeon VM: 3.0, 3.4 and 3.7 GHz idle, 2.1
// to 2.8 GHz under AMX, within a minute) and a clock taken at another moment could belong to
// another state; the higher of the two covers a change of state during the repetition.
void repeat_once(EngineRun& e, int threads, double per_rep, uint64_t clock_trips,
                 const std::vector<int>& cpus) {
  PeakPoint& point = e.peak.by_threads[threads - 1];
  for (int tries = 0; tries < 2; ++tries) {
    const double clock_before =
        clock_trips > 0 ? concurrent_clock_hz(e.v.clock, threads, clock_trips, cpus, 1) : 0;
    auto trips = std::max<uint64_t>(1, static_cast<uint64_t>(e.trips_per_s * per_rep));
    // About a millisecond of warm-up, so the timed run starts in the engine's clock state.
    auto warmup = std::max<uint64_t>(1, static_cast<uint64_t>(e.trips_per_s * 1e-3));
    RunResult run = run_concurrent(e.v.kernel, threads, trips, cpus, warmup);
    if (run.wall <= 0) continue;
    double rate = static_cast<double>(trips) * threads * e.v.ops_per_iteration / run.wall;
    if (run.disturbed) {
      e.best_disturbed[threads - 1] = std::max(e.best_disturbed[threads - 1], rate);
      continue;
    }
    ++e.good[threads - 1];
    // Per-thread rate can fall with more threads (SMT siblings): keep runs near per_rep.
    e.trips_per_s = static_cast<double>(trips) / run.wall;
    if (rate > point.ops_per_s) {
      point.ops_per_s = rate;
      if (clock_trips > 0)
        point.clock_hz =
            std::max(clock_before, concurrent_clock_hz(e.v.clock, threads, clock_trips, cpus, 1));
    }
    return;
  }
}

void finish_engine(EngineRun& e, uint64_t clock_trips, const std::vector<int>& cpus) {
  for (PeakPoint& point : e.peak.by_threads) {
    const int i = point.threads - 1;
    if (e.good[i] == 0) {
      point.ops_per_s = e.best_disturbed[i];
      point.disturbed = true;
    }
    // No undisturbed clock run beside the best repetition: the best of a few afterwards.
    if (clock_trips > 0 && point.clock_hz <= 0)
      point.clock_hz = concurrent_clock_hz(e.v.clock, point.threads, clock_trips, cpus);
    if (point.ops_per_s > e.peak.best_ops_per_s) {
      e.peak.best_ops_per_s = point.ops_per_s;
      e.peak.best_threads = point.threads;
    }
  }
}

// Measures every engine at 1..max_threads threads in rounds: each round runs one repetition of
// every engine at every thread count, and each point keeps its best round. A host's
// disturbance (on a VM, another tenant on the sibling hyperthread halves the throughput of a
// core with no trace inside the guest; seen on the Xeon VM for tens of milliseconds at a time)
// then spoils one round of a point, not all of them, as repetitions back to back would.
std::vector<InstructionPeak> measure_variants(const std::vector<std::pair<PeakDtype, Variant>>& vs,
                                              int max_threads, double seconds_per_point) {
  std::vector<int> cpus = allowed_cpus();
  if (max_threads <= 0) max_threads = static_cast<int>(cpus.size());
  std::vector<EngineRun> runs;
  for (const auto& [dtype, v] : vs) runs.push_back(start_engine(dtype, v, max_threads, cpus));
  // Clock-kernel trips for ~1 ms per clock measurement (after as many warm-up trips); 0 (no clock)
  // when it cannot be read.
  const double hz_guess = measure_core_clock_hz(0.005);
  const uint64_t clock_trips =
      hz_guess > 0 ? std::max<uint64_t>(
                         1, static_cast<uint64_t>(1e-3 * hz_guess / kClockChainCyclesPerIteration))
                   : 0;
  constexpr int kRounds = 4;
  const double per_rep = std::max(seconds_per_point / kRounds, 2e-3);
  for (int threads = 1; threads <= max_threads; ++threads)
    for (int round = 0; round < kRounds; ++round)
      for (EngineRun& e : runs)
        if (e.peak.supported) repeat_once(e, threads, per_rep, clock_trips, cpus);
  std::vector<InstructionPeak> out;
  for (EngineRun& e : runs) {
    if (e.peak.supported) finish_engine(e, clock_trips, cpus);
    out.push_back(std::move(e.peak));
  }
  return out;
}

// Only features the CPU really has: a wider one would die on an illegal instruction.
CpuFeatures usable_features(const CpuFeatures& cpu) {
  const CpuFeatures real = detect_cpu_features();
  CpuFeatures usable = cpu;
  for (auto member : {&CpuFeatures::sse2, &CpuFeatures::avx, &CpuFeatures::avx2, &CpuFeatures::fma,
                      &CpuFeatures::avx512f, &CpuFeatures::avx512bw, &CpuFeatures::avx512vl,
                      &CpuFeatures::avx512_vnni, &CpuFeatures::avx512_bf16,
                      &CpuFeatures::avx512_fp16, &CpuFeatures::avx_vnni})
    usable.*member = cpu.*member && real.*member;
  return usable;
}

}  // namespace

std::vector<std::string> vector_sequences(PeakDtype dtype, const CpuFeatures& cpu,
                                          std::string* reason) {
  std::vector<std::string> out;
  for (const Variant& v : select_variants(dtype, cpu)) {
    if (reason != nullptr) *reason = v.reason;
    if (!v.isa.empty()) out.push_back(v.isa);
  }
  return out;
}

InstructionPeak fastest_sequence(std::vector<InstructionPeak> candidates) {
  PLUMB_ASSERT(!candidates.empty(), "an engine has at least one sequence");
  size_t best = 0;
  for (size_t i = 1; i < candidates.size(); ++i)
    if (candidates[i].supported && (!candidates[best].supported ||
                                    candidates[i].best_ops_per_s > candidates[best].best_ops_per_s))
      best = i;
  InstructionPeak out = candidates[best];
  out.sequences.clear();
  for (const InstructionPeak& c : candidates)
    if (c.supported) out.sequences.push_back({c.isa, c.best_ops_per_s, c.best_threads});
  return out;
}

InstructionPeak measure_instruction_peak(PeakDtype dtype, int max_threads,
                                         double seconds_per_point) {
  return measure_instruction_peak(dtype, max_threads, seconds_per_point, detect_cpu_features());
}

InstructionPeak measure_instruction_peak(PeakDtype dtype, int max_threads, double seconds_per_point,
                                         const CpuFeatures& cpu) {
  std::vector<std::pair<PeakDtype, Variant>> vs;
  for (Variant& v : select_variants(dtype, usable_features(cpu))) vs.emplace_back(dtype, v);
  return fastest_sequence(measure_variants(vs, max_threads, seconds_per_point));
}

std::vector<InstructionPeak> measure_engine_peaks(const std::vector<PeakDtype>& dtypes,
                                                  int max_threads, double seconds_per_point) {
  const CpuFeatures cpu = detect_cpu_features();
  // Every sequence of every engine is measured in the same rounds; `engine_of` says which
  // engine each belongs to, and each engine keeps its fastest.
  std::vector<std::pair<PeakDtype, Variant>> vs;
  std::vector<size_t> engine_of;
  size_t engines = 0;
  for (PeakDtype dtype : dtypes) {
    for (Variant& v : select_variants(dtype, cpu)) {
      vs.emplace_back(dtype, v);
      engine_of.push_back(engines);
    }
    ++engines;
    // Only bf16 and int8 have tile instructions (AMX); where the CPU lacks them the matrix
    // engine is listed unsupported with the reason, as the vector one would be.
    if (dtype == PeakDtype::kBf16 || dtype == PeakDtype::kInt8) {
      vs.emplace_back(dtype, select_matrix_variant(dtype, cpu));
      engine_of.push_back(engines++);
    }
  }
  std::vector<InstructionPeak> measured = measure_variants(vs, max_threads, seconds_per_point);
  std::vector<std::vector<InstructionPeak>> by_engine(engines);
  for (size_t i = 0; i < measured.size(); ++i)
    by_engine[engine_of[i]].push_back(std::move(measured[i]));
  std::vector<InstructionPeak> out;
  for (auto& candidates : by_engine) out.push_back(fastest_sequence(std::move(candidates)));
  return out;
}

TheoryInput theory_input(const InstructionPeak& peak, double fallback_clock_hz) {
  TheoryInput in;
  in.engine = peak.engine;
  in.dtype = peak.dtype;
  in.instruction = peak.isa;
  in.instruction_bits = peak.instruction_bits;
  in.ops_per_instruction = peak.ops_per_instruction;
  if (!peak.by_threads.empty()) {
    const PeakPoint& one = peak.by_threads.front();
    in.measured_ops_per_s = one.ops_per_s / std::max(1, cores_used_by(one.threads));
    in.clock_hz = one.clock_hz > 0 ? one.clock_hz : fallback_clock_hz;
  }
  return in;
}

InstructionPeak measure_matrix_peak(PeakDtype dtype, int max_threads, double seconds_per_point) {
  return measure_variants({{dtype, select_matrix_variant(dtype, detect_cpu_features())}},
                          max_threads, seconds_per_point)
      .front();
}

}  // namespace plumb::platform
