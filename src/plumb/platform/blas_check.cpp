// BLAS detection (see blas_check.h): look up the process's sgemm_ symbol and name its library;
// ask OpenBLAS how it threads.
#include "plumb/platform/blas_check.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>

#include <ATen/Context.h>

namespace plumb::platform {
namespace {

constexpr const char* kOpenMpFix =
    "apt-get install libopenblas0-openmp, then point libblas.so.3, liblapack.so.3 and "
    "libopenblas.so.0 at it with 'update-alternatives --set' (bash scripts/setup.sh does both)";

constexpr const char* kCoreVariable = "OPENBLAS_CORETYPE";

std::string lowercase(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

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
  using GetCoreName = char* (*)();
  if (auto get_core = reinterpret_cast<GetCoreName>(dlsym(RTLD_DEFAULT, "openblas_get_corename")))
    if (const char* core = get_core()) info.core = core;
  info.matching_core = openblas_core_for(info.core, detect_cpu_features());
  return info;
}

std::string openblas_core_for(const std::string& core, const CpuFeatures& cpu) {
  // OpenBLAS's x86-64 kernel sets for CPUs without AVX: what its dynamic dispatch falls back to
  // (Prescott) or settles on for old models.
  static const char* const kPreAvx[] = {"prescott",  "core2", "penryn",  "dunnington",
                                        "nehalem",   "atom",  "opteron", "opteron_sse3",
                                        "barcelona", "bobcat"};
  const std::string name = lowercase(core);
  if (std::find(std::begin(kPreAvx), std::end(kPreAvx), name) == std::end(kPreAvx)) return "";
  // SkylakeX's kernels use AVX-512 F, BW and VL (every AVX-512 CPU since Skylake-SP).
  if (cpu.avx512f && cpu.avx512bw && cpu.avx512vl) return "SkylakeX";
  if (cpu.avx2 && cpu.fma) return "Haswell";
  return "";
}

std::string restart_with_matching_openblas_kernels(const BlasInfo& loaded, char** argv) {
  if (getenv(kCoreVariable) != nullptr) return "";  // the user's choice, or our own restart
  const std::string& core = loaded.matching_core;
  if (core.empty()) return "";
  setenv(kCoreVariable, core.c_str(), 1);
  execv("/proc/self/exe", argv);
  // Only reached when the restart failed: say so, and go on with what OpenBLAS loaded.
  const std::string why = std::strerror(errno);
  unsetenv(kCoreVariable);
  return "WARNING: OpenBLAS runs its generic pre-AVX kernels on this CPU, and restarting with " +
         std::string(kCoreVariable) + "=" + core + " failed (" + why +
         "): fp32 matrix products will run several times slower than this CPU can. Set " +
         kCoreVariable + "=" + core + " before starting plumb.";
}

bool is_optimized_blas(const std::string& library, bool libtorch_has_mkl) {
  const std::string lower = lowercase(library);
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
  if (!info.matching_core.empty())
    return "WARNING: OpenBLAS runs its pre-AVX kernels (" + info.core +
           ") on a CPU with wider vector units.\n"
           "WARNING: fp32 matrix products run several times slower than this CPU can.\n"
           "WARNING: fix: unset " +
           kCoreVariable + " (plumb then picks the kernels itself) or set it to " +
           info.matching_core + ".";
  return "";
}

std::string blas_environment_warning(const BlasInfo& info) {
  if (!info.optimized) return "reference BLAS: matrix products ~25x slower";
  if (info.threading == "pthreads")
    return "OpenBLAS pthreads build: its threads compete with LibTorch's OpenMP threads";
  if (!info.matching_core.empty())
    return "OpenBLAS pre-AVX kernels (" + info.core + ") on a CPU that runs " + info.matching_core +
           "'s: fp32 matrix products several times slower";
  return "";
}

std::string blas_description(const BlasInfo& info) {
  return info.core.empty() ? info.library : info.library + " (OpenBLAS kernels: " + info.core + ")";
}

}  // namespace plumb::platform
