// Weight-only int8 products for a few rows: y [N, O] = x [N, I] @ (codes [O, I] * scales [O])^T
// with x and y in fp32. A decode token reads every weight once and does two FLOPs per weight,
// so its products are bound by the bytes of weight read, and int8 codes are a quarter of fp32's.
// LibTorch 1.13 has no such kernel on the CPU: quantized::linear_dynamic quantizes the input at
// every call and runs oneDNN's int8 GEMM, which at one row is slower than fp32 sgemv
// (bench/linear_gemv.py --low-precision; docs/llm.md). This one streams the codes, widens them
// to fp32 in registers and multiplies them with fp32 FMAs (AVX-512, AVX2+FMA, or plain C++
// where neither exists), so it needs no vector int8 instructions and keeps the activations
// unquantized. Registered as the operator plumb::int8_weight_linear, so the profiler and the
// cost model see it like any other product.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>

namespace plumb::run {

// The vector code a product runs on.
enum class GemvIsa { kPortable, kAvx2, kAvx512 };

// The widest of the three this CPU (and its OS) runs.
GemvIsa widest_gemv_isa();
std::string gemv_isa_name(GemvIsa isa);

// Up to this many rows the int8 quantizer runs a dynamic linear layer here rather than
// through quantized::linear_dynamic: the rows share each weight row while it is in L1, so the
// codes are read once. Beyond it the product stops being bound by the weights and oneDNN's
// int8 GEMM is the faster one.
inline constexpr int64_t kInt8WeightGemvMaxRows = 16;

// Symmetric per-output-channel codes of an fp32 weight [O, ...]: scale[o] = max|w[o]| /
// code_limit (kept above 0, so an all-zero channel divides safely), codes = round(w / scale) in
// [-code_limit, code_limit], shaped as the weight. This kernel accumulates in fp32, so nothing
// saturates and it takes the full range (127) everywhere; the int8 quantizer's oneDNN weights
// come from the same function at int8_weight_code_limit() (63 where oneDNN's AVX2 kernels
// saturate, engine_paths.h).
struct Int8Rows {
  torch::Tensor codes;   // [O, ...] int8, the weight's shape
  torch::Tensor scales;  // [O] fp32
};
Int8Rows quantize_rows(const torch::Tensor& weight, int code_limit = 127);

// input [N, I] fp32 (contiguous rows), codes [O, I] int8, scales [O] fp32 -> [N, O] fp32,
// on `isa` (which must not be wider than widest_gemv_isa()). Output rows are split over
// ATen's intra-op threads.
torch::Tensor int8_weight_gemv(const torch::Tensor& input, const torch::Tensor& codes,
                               const torch::Tensor& scales, GemvIsa isa);

// The same through the dispatcher (plumb::int8_weight_linear, on the widest ISA), so an
// operator observer records it: input [.., I] -> [.., O].
torch::Tensor int8_weight_linear(const torch::Tensor& input, const torch::Tensor& codes,
                                 const torch::Tensor& scales);

}  // namespace plumb::run
