// Exact numerics of int8 GEMMs with 16-bit accumulation (the Facebook inference paper's i8-acc16,
// Sec. 3.2.1), which no library plumb links runs: x86's vpmaddubsw multiplies u8 activations by
// s8 weights and adds adjacent pairs into a saturating 16-bit sum; the kernel adds those into
// 16-bit accumulators (saturating) and spills them into 32-bit ones every `spill_every` K
// elements. Outlier-aware quantization splits the weights into a main part that fits in
// `main_bits` (7 bits: -64..63), accumulated that way, and a sparse residual accumulated in
// 32 bits. Only the arithmetic is emulated, element by element: no speed is claimed for it.
#pragma once

#include <cstdint>

#include "plumb/core/gemm_shape.h"

namespace plumb::platform {

struct Acc16Options {
  int spill_every = 32;  // K elements between spills to 32 bits (even: products come in pairs)
  int main_bits = 7;     // weights within this many bits stay in the 16-bit path
  int64_t rows = 64;     // output elements emulated: a sample of rows x cols of C (fewer
  int64_t cols = 64;     // when K is very deep)
  uint64_t seed = 0;
};

// Relative L2 errors are against the fp32 product of the same (unquantized) sampled data.
struct Acc16Error {
  int64_t outputs = 0;           // output elements emulated
  double outlier_density = 0;    // share of int8 weights outside main_bits
  double acc32_relative_l2 = 0;  // int8 with exact 32-bit sums: the quantization error alone
  double acc16_relative_l2 = 0;  // 16-bit accumulation of the full 8-bit weights
  double acc16_saturated = 0;    // share of outputs whose sum differs from the 32-bit one
  double split_relative_l2 = 0;  // 16-bit main part + 32-bit outliers
  double split_saturated = 0;
};

// Synthetic data of the shape's K: activations ReLU(N(0,1)) quantized per tensor to u8 (zero
// point 0), weights N(0,1) quantized symmetrically per output column to s8 ([-127, 127]).
// Throws std::invalid_argument for an odd spill interval or main_bits outside 2..8.
Acc16Error emulate_int8_acc16(const GemmShape& shape, const Acc16Options& options);

}  // namespace plumb::platform
