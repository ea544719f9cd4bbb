// Which BLAS LibTorch's matrix products actually run on, and how it threads. Two Debian
// set-ups make every number plumb measures wrong, so plumb says so loudly:
//   - libblas.so.3 resolved to the reference BLAS: every GEMM ~25x slower (8 vs 236 GFLOP/s
//     for a 2048^3 sgemm on 2 cores);
//   - OpenBLAS's pthreads build (libopenblas0-pthread): its own thread pool competes for the
//     cores with LibTorch's OpenMP workers, which spin after each parallel operator. On the
//     2-core VM, 2-thread matrix products ran 1.5-3x slower than 1-thread ones with it, and
//     scaled as expected with the OpenMP build (docs/benchmarks.md, "BLAS threading").
#pragma once

#include <string>

namespace plumb::platform {

struct BlasInfo {
  std::string library;     // resolved path of the shared object providing sgemm_, or ""
  bool optimized = false;  // OpenBLAS, BLIS, MKL or another tuned implementation
  std::string threading;   // OpenBLAS only: "openmp", "pthreads", "sequential"; "" otherwise
};

BlasInfo detect_blas();

// Whether the library that provides sgemm_ is a tuned BLAS: its name says so (OpenBLAS, BLIS,
// MKL, ...), or it is LibTorch itself in a build that links MKL statically (PyTorch's wheels:
// sgemm_ then lives in libtorch_cpu.so, and `libtorch_has_mkl` is at::hasMKL()).
bool is_optimized_blas(const std::string& library, bool libtorch_has_mkl);

// Name of an OpenBLAS threading model, from openblas_get_parallel()'s code (0, 1, 2).
std::string openblas_threading_name(int parallel_code);

// Multi-line warning text when the BLAS would distort measurements, "" otherwise.
std::string blas_warning(const BlasInfo& info);

// One-line form of the same problem, stored with a run's environment; "" when none.
std::string blas_environment_warning(const BlasInfo& info);

}  // namespace plumb::platform
