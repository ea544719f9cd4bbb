// Gaussian weights drawn on every intra-op thread (see parallel_normal.h).
#include "plumb/workloads/common/parallel_normal.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <mutex>

// at::parallel_for is inline, and runs its loop on the calling thread unless this file is
// compiled with OpenMP (CMakeLists.txt links OpenMP::OpenMP_CXX).
#ifndef _OPENMP
#error "plumb must be compiled with OpenMP: at::parallel_for would run on one thread"
#endif

namespace plumb::workloads {
namespace {

// 1 Mi values (4 MiB of fp32) per chunk: a generator per chunk costs microseconds, and a
// large layer still splits over every thread.
constexpr int64_t kValuesPerChunk = int64_t{1} << 20;

// SplitMix64's finaliser: neighbouring chunk numbers give unrelated seeds (the Mersenne
// Twister keeps only 32 bits of its seed, so base + chunk alone would be correlated streams).
uint64_t chunk_seed(uint64_t base, uint64_t chunk) {
  uint64_t z = base + (chunk + 1) * 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

void fill_normal_parallel(torch::Tensor& t, double std) {
  TORCH_CHECK(t.is_contiguous() && t.is_floating_point() && t.device().is_cpu(),
              "fill_normal_parallel: a contiguous floating-point CPU tensor, not ", t.toString());
  uint64_t base = 0;
  {
    auto generator = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(generator.mutex());
    base = at::check_generator<at::CPUGeneratorImpl>(generator)->random64();
  }
  // Chunks are drawn into plain tensors over the parameter's memory: autograd's mode is per
  // thread, and ATen's worker threads do not inherit the caller's no-grad scope, so a view of
  // a parameter written there would be recorded as an in-place change of a leaf.
  char* data = static_cast<char*>(t.data_ptr());
  const int64_t element = static_cast<int64_t>(t.element_size());
  const auto options = torch::TensorOptions().dtype(t.dtype());
  const int64_t n = t.numel();
  const int64_t chunks = (n + kValuesPerChunk - 1) / kValuesPerChunk;
  at::parallel_for(0, chunks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      auto generator =
          at::make_generator<at::CPUGeneratorImpl>(chunk_seed(base, static_cast<uint64_t>(c)));
      const int64_t from = c * kValuesPerChunk;
      const int64_t count = std::min(kValuesPerChunk, n - from);
      torch::from_blob(data + from * element, {count}, options).normal_(0.0, std, generator);
    }
  });
}

}  // namespace plumb::workloads
