// The intra-op thread count held for a scope: measuring code that times at a given thread count
// (GEMM peaks, fused-kernel checks, plumb gemm) applies it on entry and puts back the count it
// found on exit, on every path out, so the caller's runs keep their own setting.
#pragma once

namespace plumb::run {

class ScopedThreadCount {
 public:
  // Saves LibTorch's current intra-op thread count, then applies `threads` (apply_threads:
  // LibTorch's pool and OpenBLAS's own).
  explicit ScopedThreadCount(int threads);
  ~ScopedThreadCount();
  ScopedThreadCount(const ScopedThreadCount&) = delete;
  ScopedThreadCount& operator=(const ScopedThreadCount&) = delete;

 private:
  int saved_;
};

}  // namespace plumb::run
