// What a real matrix-multiply kernel reaches on this machine, per dtype: large square GEMMs
// through the libraries plumb's workloads run on (OpenBLAS under LibTorch for fp32 and fp64,
// oneDNN's matmul for fp32 / bf16 / fp16 / int8). The instruction peak (peak_kernels.h) is the
// roof; these are the practical ceiling beneath it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace plumb::platform {

struct GemmPeak {
  std::string dtype;    // "fp32", "fp64", "bf16", "fp16", "int8"
  std::string library;  // "openblas (libtorch mm)" or "onednn matmul"
  bool supported = false;
  std::string reason;          // why not, when unsupported
  std::string implementation;  // the kernel the library picked (oneDNN: e.g. "brg:avx512_core")
  int64_t size = 0;            // M = N = K
  int threads = 0;
  double ops_per_s = 0;  // 2*M*N*K per call (a MAC is 2 operations) / best-of-repeats time
};

// Times M=N=K=`size` GEMMs for every dtype and library at each thread count, `seconds` per
// point (best call of those that fit the budget). Unsupported combinations come back with
// supported = false and a reason, never a number: oneDNN's reference (non-vectorised) kernels
// count as unsupported, since they say nothing about what the hardware can do.
std::vector<GemmPeak> measure_gemm_peaks(int64_t size, const std::vector<int>& threads,
                                         double seconds);

}  // namespace plumb::platform
