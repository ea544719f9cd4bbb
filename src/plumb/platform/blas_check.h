// Which BLAS LibTorch's matrix products actually run on, and how it threads. Two Debian
// set-ups make every number plumb measures wrong, so plumb says so loudly:
//   - libblas.so.3 resolved to the reference BLAS: every GEMM ~25x slower (8 vs 236 GFLOP/s
//     for a 2048^3 sgemm on 2 cores);
//   - OpenBLAS's pthreads build (libopenblas0-pthread): its own thread pool competes for the
//     cores with LibTorch's OpenMP workers, which spin after each parallel operator. On the
//     2-core VM, 2-thread matrix products ran 1.5-3x slower than 1-thread ones with it, and
//     scaled as expected with the OpenMP build (docs/benchmarks.md, "BLAS threading").
// A third one plumb repairs: OpenBLAS picks its kernels from the CPU model when it loads, and a
// model it does not know (a newer CPU, or a hypervisor that reports a made-up one) gets its
// generic SSE3 kernels ("Prescott"): on the AVX-512 Xeon VM a 1024^3 sgemm ran at 26 instead of
// 132 GFLOP/s on one core. plumb then starts itself again with OPENBLAS_CORETYPE set to the
// kernels the CPU's vector units run (read only at load, hence the restart).
#pragma once

#include <string>

#include "plumb/platform/cpu_features.h"

namespace plumb::platform {

struct BlasInfo {
  std::string library;     // resolved path of the shared object providing sgemm_, or ""
  bool optimized = false;  // OpenBLAS, BLIS, MKL or another tuned implementation
  std::string threading;   // OpenBLAS only: "openmp", "pthreads", "sequential"; "" otherwise
  std::string core;        // OpenBLAS only: the kernel set it loaded ("SkylakeX"); "" otherwise
  // Set when `core` is a pre-AVX fallback on a CPU with wider vector units: the kernel set
  // that would match them (openblas_core_for); "" otherwise.
  std::string matching_core;
};

BlasInfo detect_blas();

// Whether the library that provides sgemm_ is a tuned BLAS: its name says so (OpenBLAS, BLIS,
// MKL, ...), or it is LibTorch itself in a build that links MKL statically (PyTorch's wheels:
// sgemm_ then lives in libtorch_cpu.so, and `libtorch_has_mkl` is at::hasMKL()).
bool is_optimized_blas(const std::string& library, bool libtorch_has_mkl);

// Name of an OpenBLAS threading model, from openblas_get_parallel()'s code (0, 1, 2).
std::string openblas_threading_name(int parallel_code);

// The OPENBLAS_CORETYPE that matches `cpu` when OpenBLAS loaded `core`, a kernel set for CPUs
// without AVX, on a CPU with AVX2+FMA ("Haswell") or AVX-512 ("SkylakeX"); "" when `core` is
// not such a fallback (a known AVX kernel set is OpenBLAS's own choice and is left alone).
std::string openblas_core_for(const std::string& core, const CpuFeatures& cpu);

// When `loaded` (this process's detect_blas()) runs pre-AVX kernels on this CPU and the user has
// not chosen any (OPENBLAS_CORETYPE unset), sets OPENBLAS_CORETYPE and replaces the process with
// a fresh start of the same program and arguments. Returns only when nothing needs doing, or
// with a warning when the restart failed (the process then goes on with the slow kernels).
std::string restart_with_matching_openblas_kernels(const BlasInfo& loaded, char** argv);

// Multi-line warning text when the BLAS would distort measurements, "" otherwise.
std::string blas_warning(const BlasInfo& info);

// One-line form of the same problem, stored with a run's environment; "" when none.
std::string blas_environment_warning(const BlasInfo& info);

// What a run's environment records as its BLAS: the library, and OpenBLAS's kernel set
// ("/usr/lib/.../libblas.so.3 (OpenBLAS kernels: SkylakeX)").
std::string blas_description(const BlasInfo& info);

}  // namespace plumb::platform
