// What a real matrix-multiply kernel reaches on this machine, per dtype: large square GEMMs (the
// probe's practical ceiling beneath the instruction peak of peak_kernels.h) and the GEMM shapes
// the workloads really run (plumb gemm), through the libraries plumb's workloads run on:
// OpenBLAS under LibTorch for fp32 and fp64, oneDNN's matmul for fp32 / bf16 / fp16 / int8.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "plumb/core/gemm_shape.h"
#include "plumb/core/outcome.h"

namespace plumb::platform {

struct GemmPeak {
  std::string dtype;    // "fp32", "fp64", "bf16", "fp16", "int8"
  std::string library;  // "openblas (libtorch mm)" or "onednn matmul"
  // Unsupported (with why) until the library ran it: then ok.
  Outcome outcome{OutcomeState::kUnsupported, ""};
  std::string implementation;  // the kernel the library picked (oneDNN: e.g. "brg:avx512_core")
  GemmShape shape;             // the probe's peaks are square: M = N = K
  int threads = 0;
  double ops_per_s = 0;  // 2*M*N*K*batch per call (a MAC is 2 operations) / best-of-repeats time
};

// The engines a GEMM can run on through the libraries plumb links.
enum class GemmLibrary { kTorchMm, kOneDnn };

// Times one GEMM of `shape` (batched when shape.batch > 1) in `dtype` ("fp32", "fp64", "bf16",
// "fp16", "int8") on `library`, at the thread count already applied (recorded as `threads`),
// `seconds` per point (best call of those that fit the budget). Unsupported combinations come
// back with supported = false and a reason, never a number: oneDNN's reference (non-vectorised)
// kernels count as unsupported, since they say nothing about what the hardware can do;
// LibTorch's mm runs fp32 and fp64 only (1.13 has no fast CPU kernel for the others).
GemmPeak measure_gemm(const std::string& dtype, GemmLibrary library, const GemmShape& shape,
                      int threads, double seconds);

// The square M=N=K=`size` ceilings for every dtype and library at each thread count.
std::vector<GemmPeak> measure_gemm_peaks(int64_t size, const std::vector<int>& threads,
                                         double seconds);

}  // namespace plumb::platform
