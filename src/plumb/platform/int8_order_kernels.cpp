// int8 dot products in oneDNN's order (see int8_order_kernels.h).
#include "plumb/platform/int8_order_kernels.h"

namespace plumb::platform {

#if defined(__x86_64__)

// The same three instructions as oneDNN's JIT kernels issue them without VNNI (v2.6.3 and
// later: gemm/s8x8s32/jit_avx2_gemm_s8u8s32_kern.cpp and jit_avx512_core_gemm_s8u8s32_kern.cpp
// `dot_product`; the int8 convolutions and brgemm emit the same three): per broadcast B column,
// one dot product into each A vector's accumulator through one scratch register, vpmaddwd's
// ones in a register. No cheaper sequence (16-bit accumulation, vpmaddwd amortised over several
// vpmaddubsw) is in oneDNN or any other engine LibTorch 1.13 runs int8 on. The same sequence in
// another order and other registers can still run at another rate: on an AMD Zen 3 oneDNN's
// int8 GEMM reached 270 GOP/s against 196 for plumb's compiler-scheduled 4-chain loop
// (peak_kernels.cpp, int8_avx2: GCC adds register copies and groups the multiplies). So both
// forms are timed and the faster is the roof. Operands stay in registers (oneDNN broadcasts B from
// L1). Assembly, so that the compiler keeps the order.
//   u8 A = 3, s8 B = -2: each 32-bit lane adds 4 x (3 x -2) = -24 per dot product; int32
//   accumulators wrap around harmlessly.
// The end of each kernel's loop (the label "1:" opens it), and the registers both kernels use.
#define PLUMB_LOOP_END "dec %[n]\n\tjnz 1b\n\tvzeroupper\n\t"
#define PLUMB_CLOBBERS_0_15                                                                      \
  "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", \
      "xmm11", "xmm12", "xmm13", "xmm14", "xmm15"

// clang-format off
#define PLUMB_DOT256(C, A, B)                                \
  "vpmaddubsw %%ymm" #B ", %%ymm" #A ", %%ymm15\n\t"         \
  "vpmaddwd %%ymm14, %%ymm15, %%ymm15\n\t"                   \
  "vpaddd %%ymm15, %%ymm" #C ", %%ymm" #C "\n\t"
// clang-format on

// 2 x 4 tile (oneDNN's AVX2 unroll: 16 rows = 2 ymm, 4 columns): ymm0-7 C, ymm8-9 A (u8),
// ymm10-13 B (s8), ymm14 ones (s16), ymm15 scratch.
__attribute__((target("avx2"))) void int8_avx2_onednn(uint64_t iterations, volatile double* sink) {
  if (iterations == 0) return;
  __asm__ volatile(
      "vpcmpeqw %%ymm14, %%ymm14, %%ymm14\n\t"
      "vpsrlw $15, %%ymm14, %%ymm14\n\t"  // 1 in every 16-bit lane
      "vpsllw $1, %%ymm14, %%ymm8\n\t"
      "vpaddw %%ymm14, %%ymm8, %%ymm8\n\t"  // 3 in every byte pair's low byte, 0 in the high
      "vpsllw $8, %%ymm8, %%ymm9\n\t"
      "vpor %%ymm9, %%ymm8, %%ymm8\n\t"  // 3 in every byte
      "vmovdqa %%ymm8, %%ymm9\n\t"
      "vpcmpeqb %%ymm10, %%ymm10, %%ymm10\n\t"
      "vpaddb %%ymm10, %%ymm10, %%ymm10\n\t"  // -2 in every byte
      "vmovdqa %%ymm10, %%ymm11\n\t"
      "vmovdqa %%ymm10, %%ymm12\n\t"
      "vmovdqa %%ymm10, %%ymm13\n\t"
      ".irp r,0,1,2,3,4,5,6,7\n\t"
      "vpxor %%ymm\\r, %%ymm\\r, %%ymm\\r\n\t"
      ".endr\n\t"
      "1:\n\t"                                       //
      PLUMB_DOT256(0, 8, 10) PLUMB_DOT256(1, 9, 10)  //
      PLUMB_DOT256(2, 8, 11) PLUMB_DOT256(3, 9, 11)  //
      PLUMB_DOT256(4, 8, 12) PLUMB_DOT256(5, 9, 12)  //
      PLUMB_DOT256(6, 8, 13) PLUMB_DOT256(7, 9, 13)  //
      PLUMB_LOOP_END
      : [n] "+r"(iterations)
      :
      : PLUMB_CLOBBERS_0_15);
  *sink = static_cast<double>(iterations);
}

// AVX-512 without VNNI (oneDNN's avx512_core kernels): the same in zmm registers, a 2 x 8 tile
// (as many columns as 32 registers hold with B kept in them): zmm0-15 C, zmm16-17 A (u8),
// zmm18-25 B (s8), zmm26 ones, zmm27 scratch.
// clang-format off
#define PLUMB_DOT512(C, A, B)                                \
  "vpmaddubsw %%zmm" #B ", %%zmm" #A ", %%zmm27\n\t"         \
  "vpmaddwd %%zmm26, %%zmm27, %%zmm27\n\t"                   \
  "vpaddd %%zmm27, %%zmm" #C ", %%zmm" #C "\n\t"
// clang-format on

__attribute__((target("avx512f,avx512bw"))) void int8_avx512bw_onednn(uint64_t iterations,
                                                                      volatile double* sink) {
  if (iterations == 0) return;
  __asm__ volatile(
      "vpternlogd $0xff, %%zmm26, %%zmm26, %%zmm26\n\t"
      "vpsrlw $15, %%zmm26, %%zmm26\n\t"  // 1 in every 16-bit lane
      "vpsllw $1, %%zmm26, %%zmm16\n\t"
      "vpaddw %%zmm26, %%zmm16, %%zmm16\n\t"
      "vpsllw $8, %%zmm16, %%zmm17\n\t"
      "vporq %%zmm17, %%zmm16, %%zmm16\n\t"  // 3 in every byte
      "vmovdqa64 %%zmm16, %%zmm17\n\t"
      "vpternlogd $0xff, %%zmm18, %%zmm18, %%zmm18\n\t"
      "vpaddb %%zmm18, %%zmm18, %%zmm18\n\t"  // -2 in every byte
      ".irp r,19,20,21,22,23,24,25\n\t"
      "vmovdqa64 %%zmm18, %%zmm\\r\n\t"
      ".endr\n\t"
      ".irp r,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n\t"
      "vpxord %%zmm\\r, %%zmm\\r, %%zmm\\r\n\t"
      ".endr\n\t"
      "1:\n\t"                                           //
      PLUMB_DOT512(0, 16, 18) PLUMB_DOT512(1, 17, 18)    //
      PLUMB_DOT512(2, 16, 19) PLUMB_DOT512(3, 17, 19)    //
      PLUMB_DOT512(4, 16, 20) PLUMB_DOT512(5, 17, 20)    //
      PLUMB_DOT512(6, 16, 21) PLUMB_DOT512(7, 17, 21)    //
      PLUMB_DOT512(8, 16, 22) PLUMB_DOT512(9, 17, 22)    //
      PLUMB_DOT512(10, 16, 23) PLUMB_DOT512(11, 17, 23)  //
      PLUMB_DOT512(12, 16, 24) PLUMB_DOT512(13, 17, 24)  //
      PLUMB_DOT512(14, 16, 25) PLUMB_DOT512(15, 17, 25)  //
      PLUMB_LOOP_END
      : [n] "+r"(iterations)
      :
      : PLUMB_CLOBBERS_0_15, "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23",
        "xmm24", "xmm25", "xmm26", "xmm27");
  *sink = static_cast<double>(iterations);
}
#undef PLUMB_DOT256
#undef PLUMB_DOT512
#undef PLUMB_LOOP_END
#undef PLUMB_CLOBBERS_0_15

#endif  // __x86_64__

}  // namespace plumb::platform
