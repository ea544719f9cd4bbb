// Weight-only int8 products for a few rows (see int8_weight_gemv.h). The vector kernels are
// compiled for their ISA with target attributes (plumb is built for generic x86-64) and chosen
// at run time.
#include "plumb/run/int8_weight_gemv.h"

#include <ATen/Parallel.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <limits>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

// at::parallel_for is inline, and runs its loop on the calling thread unless this file is
// compiled with OpenMP (CMakeLists.txt links OpenMP::OpenMP_CXX).
#ifndef _OPENMP
#error "plumb must be compiled with OpenMP: at::parallel_for would run on one thread"
#endif

namespace plumb::run {
namespace {

// One call's operands, flattened: input [rows, in], codes [out, in], scales [out], output
// [rows, out].
struct GemvArgs {
  const float* input = nullptr;
  const int8_t* codes = nullptr;
  const float* scales = nullptr;
  float* output = nullptr;
  int64_t rows = 0, in = 0, out = 0;
};

// The dot products of input rows with codes row o, from element `from` on, in plain C++: the
// whole row on the portable path, the tail after the last full vector on the others.
float dot_tail(const GemvArgs& a, int64_t o, int64_t n, int64_t from) {
  const int8_t* w = a.codes + o * a.in;
  const float* x = a.input + n * a.in;
  float sum = 0;
  for (int64_t i = from; i < a.in; ++i) sum += static_cast<float>(w[i]) * x[i];
  return sum;
}

void rows_portable(const GemvArgs& a, int64_t begin, int64_t end) {
  for (int64_t o = begin; o < end; ++o)
    for (int64_t n = 0; n < a.rows; ++n)
      a.output[n * a.out + o] = a.scales[o] * dot_tail(a, o, n, 0);
}

#if defined(__x86_64__)
__attribute__((target("avx2,fma"))) inline float sum_lanes_avx2(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// 8 codes -> 8 fp32 lanes.
__attribute__((target("avx2,fma"))) inline __m256 widen_avx2(const int8_t* p) {
  return _mm256_cvtepi32_ps(
      _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}

// The masked forms with every lane set: the unmasked intrinsics pass _mm512_undefined_*() as
// their merge source, which GCC 12 flags as maybe-uninitialized.
__attribute__((target("avx512f,avx512bw"))) inline float sum_lanes_avx512(__m512 v) {
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, v);
  float sum = 0;
  for (float lane : lanes) sum += lane;
  return sum;
}

// 16 codes -> 16 fp32 lanes.
__attribute__((target("avx512f,avx512bw"))) inline __m512 widen_avx512(const int8_t* p) {
  constexpr __mmask16 kAll = 0xFFFF;
  return _mm512_maskz_cvtepi32_ps(
      kAll, _mm512_maskz_cvtepi8_epi32(kAll, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}

// Output rows [begin, end) for every input row, one output row at a time: its codes (in bytes)
// stay in L1 while every input row passes over them, so they come from memory once per call,
// and the rows are read in address order, one stream the hardware prefetcher follows (four rows
// interleaved, sharing each load of the input, streamed GPT-2's output projection at half the
// rate: 13.6 against 25-30 G codes/s on one Zen 5 core). Four accumulators hide the FMA
// latency; the software prefetch runs kPrefetchBytes ahead into the next rows.
constexpr int64_t kPrefetchBytes = 4096;
#define PLUMB_INT8_GEMV_ROWS(ISA, TARGET, VEC, LANES, ZERO, LOAD, FMA, ADD)                        \
  __attribute__((target(TARGET))) void rows_##ISA(const GemvArgs& a, int64_t begin, int64_t end) { \
    const int64_t in = a.in, unrolled = in / (4 * (LANES)) * (4 * (LANES));                        \
    const int64_t full = in / (LANES) * (LANES);                                                   \
    for (int64_t o = begin; o < end; ++o) {                                                        \
      const int8_t* w = a.codes + o * in;                                                          \
      for (int64_t n = 0; n < a.rows; ++n) {                                                       \
        const float* x = a.input + n * in;                                                         \
        VEC s0 = ZERO(), s1 = ZERO(), s2 = ZERO(), s3 = ZERO();                                    \
        int64_t i = 0;                                                                             \
        for (; i < unrolled; i += 4 * (LANES)) {                                                   \
          if (n == 0)                                                                              \
            _mm_prefetch(reinterpret_cast<const char*>(w + i + kPrefetchBytes), _MM_HINT_T0);      \
          s0 = FMA(widen_##ISA(w + i), LOAD(x + i), s0);                                           \
          s1 = FMA(widen_##ISA(w + i + (LANES)), LOAD(x + i + (LANES)), s1);                       \
          s2 = FMA(widen_##ISA(w + i + 2 * (LANES)), LOAD(x + i + 2 * (LANES)), s2);               \
          s3 = FMA(widen_##ISA(w + i + 3 * (LANES)), LOAD(x + i + 3 * (LANES)), s3);               \
        }                                                                                          \
        for (; i < full; i += (LANES)) s0 = FMA(widen_##ISA(w + i), LOAD(x + i), s0);              \
        const float sum = sum_lanes_##ISA(ADD(ADD(s0, s1), ADD(s2, s3)));                          \
        a.output[n * a.out + o] = a.scales[o] * (sum + dot_tail(a, o, n, full));                   \
      }                                                                                            \
    }                                                                                              \
  }

PLUMB_INT8_GEMV_ROWS(avx2, "avx2,fma", __m256, 8, _mm256_setzero_ps, _mm256_loadu_ps,
                     _mm256_fmadd_ps, _mm256_add_ps)
PLUMB_INT8_GEMV_ROWS(avx512, "avx512f,avx512bw", __m512, 16, _mm512_setzero_ps, _mm512_loadu_ps,
                     _mm512_fmadd_ps, _mm512_add_ps)
#undef PLUMB_INT8_GEMV_ROWS
#endif

torch::Tensor int8_weight_linear_kernel(const torch::Tensor& input, const torch::Tensor& codes,
                                        const torch::Tensor& scales) {
  return int8_weight_gemv(input, codes, scales, widest_gemv_isa());
}

TORCH_LIBRARY(plumb, m) {
  m.def("int8_weight_linear(Tensor input, Tensor codes, Tensor scales) -> Tensor",
        TORCH_FN(int8_weight_linear_kernel));
}

}  // namespace

GemvIsa widest_gemv_isa() {
#if defined(__x86_64__)
  // __builtin_cpu_supports also checks that the OS saves the wider registers.
  static const GemvIsa isa = __builtin_cpu_supports("avx512bw") ? GemvIsa::kAvx512
                             : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")
                                 ? GemvIsa::kAvx2
                                 : GemvIsa::kPortable;
  return isa;
#else
  return GemvIsa::kPortable;
#endif
}

std::string gemv_isa_name(GemvIsa isa) {
  switch (isa) {
    case GemvIsa::kAvx512:
      return "avx512";
    case GemvIsa::kAvx2:
      return "avx2+fma";
    case GemvIsa::kPortable:
      break;
  }
  return "portable";
}

torch::Tensor int8_weight_gemv(const torch::Tensor& input, const torch::Tensor& codes,
                               const torch::Tensor& scales, GemvIsa isa) {
  TORCH_CHECK(input.scalar_type() == at::kFloat && codes.scalar_type() == at::kChar &&
                  scales.scalar_type() == at::kFloat && codes.dim() == 2 && scales.dim() == 1 &&
                  scales.size(0) == codes.size(0) && input.dim() >= 1 &&
                  input.size(-1) == codes.size(1) && input.is_cpu() && codes.is_cpu() &&
                  scales.is_cpu(),
              "int8_weight_linear: wants input [.., I] fp32, codes [O, I] int8 and scales [O] "
              "fp32 on the CPU");
  TORCH_CHECK(static_cast<int>(isa) <= static_cast<int>(widest_gemv_isa()),
              "int8_weight_linear: this CPU cannot run the ", gemv_isa_name(isa), " kernel");
  const auto x = input.reshape({-1, input.size(-1)}).contiguous();  // [N, I]
  const auto w = codes.contiguous();                                // [O, I]
  const auto s = scales.contiguous();                               // [O]
  auto shape = input.sizes().vec();
  shape.back() = codes.size(0);
  auto y = torch::empty({x.size(0), codes.size(0)}, input.options());  // [N, O]
  GemvArgs a{x.data_ptr<float>(), w.data_ptr<int8_t>(),
             s.data_ptr<float>(), y.data_ptr<float>(),
             x.size(0),           x.size(1),
             codes.size(0)};
  // 64 output rows per task at least: a task of fewer spends more on the pool than it saves.
  at::parallel_for(0, a.out, 64, [&](int64_t begin, int64_t end) {
    switch (isa) {
#if defined(__x86_64__)
      case GemvIsa::kAvx512:
        rows_avx512(a, begin, end);
        return;
      case GemvIsa::kAvx2:
        rows_avx2(a, begin, end);
        return;
#endif
      default:
        rows_portable(a, begin, end);
    }
  });
  return y.view(shape);  // [.., O]
}

Int8Rows quantize_rows(const torch::Tensor& weight, int code_limit) {
  TORCH_CHECK(code_limit > 0 && code_limit <= 127, "int8 codes reach at most 127, not ",
              code_limit);
  // One pass per row, rows split over ATen's threads, into the code tensor itself: no temporary
  // of the weight's size (each would be mapped and faulted in anew, seconds for a billion
  // weights), where the tensor expressions it replaces made three.
  const auto w = weight.reshape({weight.size(0), -1}).to(at::kFloat).contiguous();  // [O, I]
  const int64_t out = w.size(0), in = w.size(1);
  auto codes = torch::empty({out, in}, at::kChar);  // [O, I]
  auto scales = torch::empty({out}, at::kFloat);    // [O]
  const float* src = w.data_ptr<float>();
  int8_t* dst = codes.data_ptr<int8_t>();
  float* scale_of = scales.data_ptr<float>();
  const float limit = static_cast<float>(code_limit);
  at::parallel_for(0, out, 1, [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      const float* row = src + o * in;
      float largest = 0;
      for (int64_t i = 0; i < in; ++i) largest = std::max(largest, std::abs(row[i]));
      // Kept above 0, so an all-zero channel divides safely (its codes are 0).
      const float scale = std::max(largest / limit, std::numeric_limits<float>::min());
      scale_of[o] = scale;
      int8_t* code = dst + o * in;
      // Round half to even, as torch.round and oneDNN's quantizers do.
      for (int64_t i = 0; i < in; ++i)
        code[i] = static_cast<int8_t>(std::clamp(std::nearbyint(row[i] / scale), -limit, limit));
    }
  });
  return {codes.view(weight.sizes()), scales};
}

torch::Tensor int8_weight_linear(const torch::Tensor& input, const torch::Tensor& codes,
                                 const torch::Tensor& scales) {
  static const auto op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("plumb::int8_weight_linear", "")
          .typed<torch::Tensor(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&)>();
  return op.call(input, codes, scales);
}

}  // namespace plumb::run
