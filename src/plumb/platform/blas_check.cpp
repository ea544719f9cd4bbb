// BLAS detection (see blas_check.h): look up the process's sgemm_ symbol and name its library;
// ask OpenBLAS how it threads.
#include "plumb/platform/blas_check.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>

#include <algorithm>
#include <cctype>

#include <ATen/Context.h>

namespace plumb::platform {
namespace {

constexpr const char* kOpenMpFix =
    "apt-get install libopenblas0-openmp, then point libblas.so.3, liblapack.so.3 and "
    "libopenblas.so.0 at it with 'update-alternatives --set' (bash scripts/setup.sh does both)";

}  // namespace

BlasInfo detect_blas() {
  BlasInfo info;
  // LibTorch is linked against libblas.so.3, so sgemm_ is in the global symbol scope.
  void* symbol = dlsym(RTLD_DEFAULT, "sgemm_");
  Dl_info dl{};
  if (symbol == nullptr || dladdr(symbol, &dl) == 0 || dl.dli_fname == nullptr) return info;
  char resolved[PATH_MAX];
  info.library = realpath(dl.dli_fname, resolved) != nullptr ? resolved : dl.dli_fname;
  info.optimized = is_optimized_blas(info.library, at::hasMKL());
  // Part of OpenBLAS's public API (cblas.h); absent from every other BLAS.
  using GetParallel = int (*)();
  if (auto get_parallel =
          reinterpret_cast<GetParallel>(dlsym(RTLD_DEFAULT, "openblas_get_parallel")))
    info.threading = openblas_threading_name(get_parallel());
  return info;
}

bool is_optimized_blas(const std::string& library, bool libtorch_has_mkl) {
  std::string lower = library;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const char* tuned : {"openblas", "blis", "mkl", "atlas", "armpl", "accelerate"})
    if (lower.find(tuned) != std::string::npos) return true;
  const std::string name = lower.substr(lower.find_last_of('/') + 1);
  return libtorch_has_mkl && name.rfind("libtorch", 0) == 0;
}

std::string openblas_threading_name(int parallel_code) {
  switch (parallel_code) {
    case 0:
      return "sequential";
    case 1:
      return "pthreads";
    case 2:
      return "openmp";
    default:
      return "unknown";
  }
}

std::string blas_warning(const BlasInfo& info) {
  if (!info.optimized) {
    const std::string lib = info.library.empty() ? "an unknown library" : info.library;
    return "WARNING: LibTorch's BLAS is " + lib +
           ", not an optimized BLAS.\n"
           "WARNING: matrix products will run ~25x slower and every number plumb measures will "
           "be wrong.\n"
           "WARNING: fix: " +
           std::string(kOpenMpFix) + ".";
  }
  if (info.threading == "pthreads")
    return "WARNING: LibTorch's BLAS is OpenBLAS's pthreads build (" + info.library +
           ").\n"
           "WARNING: its thread pool and LibTorch's OpenMP threads compete for the cores: "
           "multi-threaded matrix products run up to ~3x slower and thread scaling is wrong.\n"
           "WARNING: fix: " +
           std::string(kOpenMpFix) + ".";
  return "";
}

std::string blas_environment_warning(const BlasInfo& info) {
  if (!info.optimized) return "reference BLAS: matrix products ~25x slower";
  if (info.threading == "pthreads")
    return "OpenBLAS pthreads build: its threads compete with LibTorch's OpenMP threads";
  return "";
}

}  // namespace plumb::platform
