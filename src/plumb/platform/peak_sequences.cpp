// Register-resident instruction-peak kernels and the sequences each engine runs (see
// peak_sequences.h). Each kernel keeps 12-16 independent accumulator chains in vector registers,
// enough to cover FMA latency (4-5 cycles) x 2 units on every current core, so the loop is
// bound by issue throughput, not by latency. The kernels carry their own target attribute and
// are chosen at run time, because plumb is compiled for generic x86-64.
#include "plumb/platform/peak_sequences.h"

#include "plumb/platform/int8_order_kernels.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

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

PeakVariant unsupported(std::string reason) {
  PeakVariant v;
  v.reason = std::move(reason);
  return v;
}

// A vector kernel with `chains` accumulators of `bits`-wide instructions doing `ops_per_lane`
// operations per `lane_bits` lane.
PeakVariant vector_variant(std::string isa, PeakKernel kernel, int chains, int bits, int lane_bits,
                           int ops_per_lane) {
  PeakVariant v;
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

}  // namespace

void plain_clock_kernel(uint64_t iterations, volatile double* sink) {
  run_clock_chain(iterations);
  *sink = 0;
}

// The vector sequences an engine on `cpu` runs `dtype` with, each to be timed (the fastest is
// the engine's peak): one, except int8 without VNNI on AVX2, where the three-instruction form
// is timed in oneDNN's order and in plumb's 4-chain loop. One unsupported PeakVariant with the
// reason when there is none.
std::vector<PeakVariant> select_vector_variants(Dtype dtype, const CpuFeatures& cpu) {
#if defined(__x86_64__)
  switch (dtype) {
    case Dtype::kFp32:
      if (cpu.avx512f) return {vector_variant("avx512 vfmadd231ps", fp32_avx512, 16, 512, 32, 2)};
      if (cpu.avx2 && cpu.fma)
        return {vector_variant("avx2 vfmadd231ps", fp32_avx2, 12, 256, 32, 2)};
      if (cpu.sse2) return {vector_variant("sse2 mulps+addps", fp32_sse2, 12, 128, 32, 2)};
      return {unsupported("no SSE2 on this CPU")};
    case Dtype::kFp64:
      if (cpu.avx512f) return {vector_variant("avx512 vfmadd231pd", fp64_avx512, 16, 512, 64, 2)};
      if (cpu.avx2 && cpu.fma)
        return {vector_variant("avx2 vfmadd231pd", fp64_avx2, 12, 256, 64, 2)};
      if (cpu.sse2) return {vector_variant("sse2 mulpd+addpd", fp64_sse2, 12, 128, 64, 2)};
      return {unsupported("no SSE2 on this CPU")};
    case Dtype::kBf16:
      if (cpu.avx512_bf16)
        return {vector_variant("avx512_bf16 vdpbf16ps", bf16_avx512, 16, 512, 32, 4)};
      return {unsupported("no avx512_bf16 on this CPU")};
    case Dtype::kFp16:
      if (!cpu.avx512_fp16) return {unsupported("no avx512_fp16 on this CPU")};
#if PLUMB_HAVE_AVX512FP16_INTRINSICS
      return {vector_variant("avx512_fp16 vfmadd231ph", fp16_avx512, 16, 512, 16, 2)};
#else
      return {unsupported("plumb was built by a compiler without avx512_fp16 intrinsics")};
#endif
    case Dtype::kInt8:
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

PeakVariant select_matrix_variant(Dtype dtype, const CpuFeatures& cpu) {
  std::string reason;
  PeakVariant v;
  v.engine = EngineKind::kMatrix;
  if (!amx_usable(cpu, dtype, &reason)) {
    v.reason = reason;
    return v;
  }
  v.isa = dtype == Dtype::kBf16 ? "amx tdpbf16ps" : "amx tdpbusd";
  v.kernel = tile_peak_kernel(dtype);
  v.clock = tile_clock_kernel(dtype);
  v.ops_per_instruction = tile_ops_per_instruction(dtype);
  v.ops_per_iteration = 6 * v.ops_per_instruction;  // six accumulator tiles per trip
  return v;
}

}  // namespace plumb::platform
