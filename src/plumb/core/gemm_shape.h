// The shape of one matrix product, C[M,N] = A[M,K] x B[K,N], repeated `batch` times (the groups
// of a grouped convolution, the matrices of a bmm). The profiler reads it off the operators a
// step runs (a convolution counts as its im2col GEMM); plumb gemm measures it per precision.
#pragma once

#include <cstdint>
#include <string>

namespace plumb {

struct GemmShape {
  int64_t batch = 1;
  int64_t m = 0, n = 0, k = 0;

  double macs() const;  // batch x M x N x K
  // FLOPs per byte when A, B and C each cross memory once at `element_bytes` per element
  // (C at the same size: int8 GEMMs write 32-bit sums, callers pass what they mean).
  double intensity(double element_bytes) const;
  // The side of a square GEMM with the same MACs (what HPC benchmarks run), and that square
  // GEMM's intensity: how much data reuse the shape gives up against it.
  double square_side() const;
  double square_intensity(double element_bytes) const;
  // "8 x 3136x64x576" (batch shown only when > 1).
  std::string text() const;

  bool operator<(const GemmShape& o) const;
  bool operator==(const GemmShape& o) const;
};

}  // namespace plumb
