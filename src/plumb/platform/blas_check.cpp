// BLAS detection (see blas_check.h): look up the process's sgemm_ symbol and name its library.
#include "plumb/platform/blas_check.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>

#include <algorithm>
#include <cctype>

namespace plumb::platform {

BlasInfo detect_blas() {
  BlasInfo info;
  // LibTorch is linked against libblas.so.3, so sgemm_ is in the global symbol scope.
  void* symbol = dlsym(RTLD_DEFAULT, "sgemm_");
  Dl_info dl{};
  if (symbol == nullptr || dladdr(symbol, &dl) == 0 || dl.dli_fname == nullptr) return info;
  char resolved[PATH_MAX];
  info.library = realpath(dl.dli_fname, resolved) != nullptr ? resolved : dl.dli_fname;
  std::string lower = info.library;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const char* tuned : {"openblas", "blis", "mkl", "atlas", "armpl", "accelerate"})
    if (lower.find(tuned) != std::string::npos) info.optimized = true;
  return info;
}

std::string blas_warning(const BlasInfo& info) {
  if (info.optimized) return "";
  const std::string lib = info.library.empty() ? "an unknown library" : info.library;
  return "WARNING: LibTorch's BLAS is " + lib +
         ", not an optimized BLAS.\n"
         "WARNING: matrix products will run ~25x slower and every number plumb measures will be "
         "wrong.\n"
         "WARNING: fix: apt-get install libopenblas0-pthread (and check 'update-alternatives "
         "--display libblas.so.3-$(uname -m)-linux-gnu').";
}

}  // namespace plumb::platform
