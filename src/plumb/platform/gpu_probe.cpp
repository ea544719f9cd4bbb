// GPU ceilings through LibTorch (see gpu_probe.h).
#include "plumb/platform/gpu_probe.h"

#include <chrono>
#include <functional>
#include <limits>

#include <torch/cuda.h>
#include <torch/torch.h>

#ifdef PLUMB_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#endif

namespace plumb::platform {
namespace {

// Best time of `call` over `repeats` timed calls, each synchronised so the host clock sees
// the device's work; one untimed call first (cuBLAS heuristics, allocator warm-up).
double best_device_seconds(const std::function<void()>& call, int repeats) {
  call();
  torch::cuda::synchronize();
  double best = std::numeric_limits<double>::infinity();
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    call();
    torch::cuda::synchronize();
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

std::string device_name() {
#ifdef PLUMB_WITH_CUDA
  return at::cuda::getDeviceProperties(0)->name;
#else
  return "cuda:0";
#endif
}

}  // namespace

nlohmann::ordered_json probe_gpu(bool thorough) {
  if (!torch::cuda::is_available())
    return {{"available", false},
            {"reason", "no CUDA device visible to LibTorch (CPU-only build or no GPU)"}};
  nlohmann::ordered_json out;
  out["available"] = true;
  out["device"] = device_name();
  out["device_count"] = torch::cuda::device_count();
  torch::NoGradGuard no_grad;
  const auto cuda = torch::TensorOptions().device(torch::kCUDA, 0);
  const int64_t n = thorough ? 8192 : 4096;
  const int repeats = thorough ? 20 : 5;
  struct Case {
    const char* name;
    torch::ScalarType dtype;
    bool tf32;  // fp32 inputs on tensor cores (TF32), as cuBLAS does when allowed
  };
  nlohmann::ordered_json peaks;
  const bool tf32_before = at::globalContext().allowTF32CuBLAS();
  for (const Case& c :
       {Case{"fp32", torch::kFloat32, false}, Case{"tf32", torch::kFloat32, true},
        Case{"fp16", torch::kFloat16, false}, Case{"bf16", torch::kBFloat16, false}}) {
    at::globalContext().setAllowTF32CuBLAS(c.tf32);
    try {
      const auto a = torch::ones({n, n}, cuda.dtype(c.dtype));
      const auto b = torch::ones({n, n}, cuda.dtype(c.dtype));
      auto r = torch::empty({n, n}, cuda.dtype(c.dtype));
      const double s = best_device_seconds([&] { at::mm_out(r, a, b); }, repeats);
      peaks[c.name] = {{"supported", true},
                       {"gemm_flops", 2.0 * n * n * static_cast<double>(n) / s},
                       {"size", n}};
    } catch (const c10::Error& e) {
      peaks[c.name] = {{"supported", false}, {"reason", e.what_without_backtrace()}};
    }
  }
  at::globalContext().setAllowTF32CuBLAS(tf32_before);
  out["peaks"] = peaks;
  // 1 GiB (quick 256 MiB) per buffer: far beyond any GPU L2, so the copy streams HBM.
  const int64_t bytes = (thorough ? 1024LL : 256LL) << 20;
  const auto src = torch::ones({bytes}, cuda.dtype(torch::kUInt8));
  auto dst = torch::empty({bytes}, cuda.dtype(torch::kUInt8));
  const double s = best_device_seconds([&] { dst.copy_(src); }, repeats);
  out["bandwidth"] = {{"copy", 2.0 * static_cast<double>(bytes) / s}, {"bytes", bytes}};
  return out;
}

}  // namespace plumb::platform
