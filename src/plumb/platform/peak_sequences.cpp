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

// X(i, args...) for each accumulator chain i.
// clang-format off
#define PLUMB_REP12(X, ...)                                                                  \
  X(0, __VA_ARGS__) X(1, __VA_ARGS__) X(2, __VA_ARGS__) X(3, __VA_ARGS__) X(4, __VA_ARGS__)  \
  X(5, __VA_ARGS__) X(6, __VA_ARGS__) X(7, __VA_ARGS__) X(8, __VA_ARGS__) X(9, __VA_ARGS__)  \
  X(10, __VA_ARGS__) X(11, __VA_ARGS__)
#define PLUMB_REP16(X, ...)                                                                  \
  PLUMB_REP12(X, __VA_ARGS__) X(12, __VA_ARGS__) X(13, __VA_ARGS__) X(14, __VA_ARGS__)       \
  X(15, __VA_ARGS__)
// clang-format on

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
__attribute__((target("avx512f"))) double first_and_last(__m512i v) {
  return first_and_last(_mm512_castsi512_ps(v));
}
__attribute__((target("avx"))) double first_and_last(__m256 v) {
  float lanes[8];
  _mm256_storeu_ps(lanes, v);
  return lanes[0] + lanes[7];
}
__attribute__((target("avx"))) double first_and_last(__m256d v) {
  double lanes[4];
  _mm256_storeu_pd(lanes, v);
  return lanes[0] + lanes[3];
}
// The int32 lanes 0 and 7 added (AVX2).
#define PLUMB_EPI32_ENDS(v) (_mm256_extract_epi32(v, 0) + _mm256_extract_epi32(v, 7))
// No FMA below AVX2: a dependent multiply then add.
#define PLUMB_MUL_ADD_PS(acc, a, b) _mm_add_ps(_mm_mul_ps(acc, a), b)
#define PLUMB_MUL_ADD_PD(acc, a, b) _mm_add_pd(_mm_mul_pd(acc, a), b)

// Every kernel below is this loop: CHAINS (PLUMB_REP12 or PLUMB_REP16) independent accumulators
// of type VEC, chain i starting at SET1(BASE + i); each trip steps every chain by
// acc = STEP(acc, a, b); then the chains are summed with ADD from ZERO and the sum goes to the
// sink through first_and_last or REDUCE. The trailing arguments declare the operands a and b.
#define PLUMB_CHAIN_INIT(i, VEC, SET1, BASE) VEC acc##i = SET1(BASE + (i));
#define PLUMB_CHAIN_STEP(i, STEP) acc##i = STEP(acc##i, a, b);
#define PLUMB_CHAIN_FOLD(i, ADD) sum = ADD(sum, acc##i);
#define PLUMB_CHAIN_KERNEL(NAME, TARGET, CHAINS, VEC, SET1, BASE, STEP, ADD, ZERO, REDUCE, ...) \
  __attribute__((target(TARGET))) void NAME(uint64_t iterations, volatile double* sink) {       \
    __VA_ARGS__;                                                                                \
    CHAINS(PLUMB_CHAIN_INIT, VEC, SET1, BASE)                                                   \
    for (uint64_t it = 0; it < iterations; ++it) {                                              \
      CHAINS(PLUMB_CHAIN_STEP, STEP)                                                            \
    }                                                                                           \
    VEC sum = ZERO;                                                                             \
    CHAINS(PLUMB_CHAIN_FOLD, ADD)                                                               \
    *sink = REDUCE(sum);                                                                        \
  }

// acc = acc * 0.999 + 0.001 converges to 1: no overflow, no denormals (which would be slow).
// 12 accumulators on AVX2 and SSE2: 16 ymm/xmm registers, and a, b need two.
PLUMB_CHAIN_KERNEL(fp32_avx512, "avx512f", PLUMB_REP16, __m512, _mm512_set1_ps, 1.0f,
                   _mm512_fmadd_ps, _mm512_add_ps, _mm512_setzero_ps(), first_and_last,
                   const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(0.001f))
PLUMB_CHAIN_KERNEL(fp32_avx2, "avx2,fma", PLUMB_REP12, __m256, _mm256_set1_ps, 1.0f,
                   _mm256_fmadd_ps, _mm256_add_ps, _mm256_setzero_ps(), first_and_last,
                   const __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(0.001f))
PLUMB_CHAIN_KERNEL(fp32_sse2, "sse2", PLUMB_REP12, __m128, _mm_set1_ps, 1.0f, PLUMB_MUL_ADD_PS,
                   _mm_add_ps, _mm_setzero_ps(), _mm_cvtss_f32,
                   const __m128 a = _mm_set1_ps(0.999f), b = _mm_set1_ps(0.001f))
PLUMB_CHAIN_KERNEL(fp64_avx512, "avx512f", PLUMB_REP16, __m512d, _mm512_set1_pd, 1.0,
                   _mm512_fmadd_pd, _mm512_add_pd, _mm512_setzero_pd(), first_and_last,
                   const __m512d a = _mm512_set1_pd(0.999), b = _mm512_set1_pd(0.001))
PLUMB_CHAIN_KERNEL(fp64_avx2, "avx2,fma", PLUMB_REP12, __m256d, _mm256_set1_pd, 1.0,
                   _mm256_fmadd_pd, _mm256_add_pd, _mm256_setzero_pd(), first_and_last,
                   const __m256d a = _mm256_set1_pd(0.999), b = _mm256_set1_pd(0.001))
PLUMB_CHAIN_KERNEL(fp64_sse2, "sse2", PLUMB_REP12, __m128d, _mm_set1_pd, 1.0, PLUMB_MUL_ADD_PD,
                   _mm_add_pd, _mm_setzero_pd(), _mm_cvtsd_f64,
                   const __m128d a = _mm_set1_pd(0.999), b = _mm_set1_pd(0.001))

// acc += x*y + x*(-y) per lane: the pair products cancel, so the accumulators stay finite
// however long the loop runs, and the hardware still does every multiply and add. Lanes
// alternate (1.5, 1.5) and (0.25, -0.25) within each bf16 pair.
PLUMB_CHAIN_KERNEL(bf16_avx512, "avx512f,avx512bf16", PLUMB_REP16, __m512, _mm512_set1_ps, 1.0f,
                   _mm512_dpbf16_ps, _mm512_add_ps, _mm512_setzero_ps(), first_and_last,
                   const __m512 x = _mm512_set1_ps(1.5f), y = _mm512_set1_ps(0.25f);
                   const __m512bh a = _mm512_cvtne2ps_pbh(x, x);
                   const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_sub_ps(_mm512_setzero_ps(), y), y))

#if PLUMB_HAVE_AVX512FP16_INTRINSICS
// fp16 constants as bit patterns (0x3BFE = 0.999, 0x1419 = 0.001, 0x3C00 = 1): avoids relying
// on _Float16 support in the C++ front end.
__attribute__((target("avx512f,avx512fp16"))) double first_and_last(__m512h v) {
  return first_and_last(_mm512_castph_ps(v));
}
#define PLUMB_FP16_BITS(bits) _mm512_castsi512_ph(_mm512_set1_epi16(bits))
PLUMB_CHAIN_KERNEL(fp16_avx512, "avx512f,avx512fp16", PLUMB_REP16, __m512h, PLUMB_FP16_BITS, 0x3C00,
                   _mm512_fmadd_ph, _mm512_add_ph, _mm512_castsi512_ph(_mm512_setzero_si512()),
                   first_and_last, const __m512h a = PLUMB_FP16_BITS(0x3BFE),
                   b = PLUMB_FP16_BITS(0x1419))
#undef PLUMB_FP16_BITS
#endif  // PLUMB_HAVE_AVX512FP16_INTRINSICS

// int32 accumulators wrap around harmlessly (vpdpbusd does not saturate).
PLUMB_CHAIN_KERNEL(int8_avx512_vnni, "avx512f,avx512vnni", PLUMB_REP16, __m512i, _mm512_set1_epi32,
                   0, _mm512_dpbusd_epi32, _mm512_add_epi32, _mm512_setzero_si512(), first_and_last,
                   const __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(-2))
PLUMB_CHAIN_KERNEL(int8_avx_vnni, "avx2,avxvnni", PLUMB_REP12, __m256i, _mm256_set1_epi32, 0,
                   _mm256_dpbusd_avx_epi32, _mm256_add_epi32, _mm256_setzero_si256(),
                   PLUMB_EPI32_ENDS, const __m256i a = _mm256_set1_epi8(3),
                   b = _mm256_set1_epi8(-2))

#undef PLUMB_CHAIN_KERNEL
#undef PLUMB_CHAIN_INIT
#undef PLUMB_CHAIN_STEP
#undef PLUMB_CHAIN_FOLD
#undef PLUMB_MUL_ADD_PS
#undef PLUMB_MUL_ADD_PD
#undef PLUMB_EPI32_ENDS

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
