// Which BLAS LibTorch's matrix products actually run on. Debian can resolve libblas.so.3 to
// the reference BLAS, which makes every GEMM ~25x slower (8 vs 236 GFLOP/s for a 2048^3
// sgemm on 2 cores): a benchmark run on it measures the wrong thing, so plumb says so loudly.
#pragma once

#include <string>

namespace plumb::platform {

struct BlasInfo {
  std::string library;     // resolved path of the shared object providing sgemm_, or ""
  bool optimized = false;  // OpenBLAS, BLIS, MKL or another tuned implementation
};

BlasInfo detect_blas();

// Multi-line warning text when the BLAS is not optimized, "" otherwise.
std::string blas_warning(const BlasInfo& info);

}  // namespace plumb::platform
