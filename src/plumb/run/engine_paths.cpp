// Reads the reduced-precision paths LibTorch and oneDNN take on this CPU (see engine_paths.h).
#include "plumb/run/engine_paths.h"

#include <ATen/Context.h>
#include <c10/core/InferenceMode.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <limits>

#include "plumb/run/step_loop.h"

#ifdef PLUMB_WITH_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#endif

namespace plumb::run {

std::string onednn_isa() {
#ifdef PLUMB_WITH_ONEDNN
  // Debian's LibTorch links this very libdnnl.so, so its answer is the one LibTorch's kernels
  // get (ONEDNN_MAX_CPU_ISA included).
  switch (dnnl_get_effective_cpu_isa()) {
    case dnnl_cpu_isa_sse41:
      return "sse41";
    case dnnl_cpu_isa_avx:
      return "avx";
    case dnnl_cpu_isa_avx2:
      return "avx2";
    case dnnl_cpu_isa_avx2_vnni:
      return "avx2_vnni";
    case dnnl_cpu_isa_avx512_mic:
      return "avx512_mic";
    case dnnl_cpu_isa_avx512_mic_4ops:
      return "avx512_mic_4ops";
    case dnnl_cpu_isa_avx512_core:
      return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx:
      return "avx512_core_amx";
    default:
      return "other";
  }
#else
  return "";
#endif
}

bool int8_pairs_saturate() {
#ifdef PLUMB_WITH_ONEDNN
  // oneDNN's ISA values are bit sets: 0x40 is AVX-512 VNNI (and everything after it), 0x400
  // AVX-VNNI.
  const unsigned isa = static_cast<unsigned>(dnnl_get_effective_cpu_isa());
  return (isa & 0x40u) == 0 && (isa & 0x400u) == 0;
#else
  // A PyTorch wheel's LibTorch keeps its oneDNN private: the CPU's own features decide.
  return !__builtin_cpu_supports("avx512vnni") && !__builtin_cpu_supports("avxvnni");
#endif
}

int int8_weight_code_limit() {
  return int8_pairs_saturate() ? 63 : 127;
}

namespace {

// LibTorch's own test (mkldnn_bf16_device_check in 1.13 and 2.x).
bool cpu_passes_libtorch_bf16_check() {
  return __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512dq");
}

// False where oneDNN runs below AVX-512 (0x20 is the AVX-512 core bit of its ISA values).
bool onednn_runs_avx512() {
#ifdef PLUMB_WITH_ONEDNN
  return (static_cast<unsigned>(dnnl_get_effective_cpu_isa()) & 0x20u) != 0;
#else
  return true;
#endif
}

}  // namespace

Bf16Kernels bf16_kernels() {
  return cpu_passes_libtorch_bf16_check() && onednn_runs_avx512() &&
                 at::globalContext().userEnabledMkldnn()
             ? Bf16Kernels::kOneDnn
             : Bf16Kernels::kReference;
}

Bf16KernelScope::Bf16KernelScope() {
  if (bf16_kernels() == Bf16Kernels::kReference && at::globalContext().userEnabledMkldnn())
    native_ = std::make_unique<EngineChoice>(Engine::kNative);
}

Bf16KernelScope::~Bf16KernelScope() = default;

const char* bf16_kernels_name(Bf16Kernels kernels) {
  return kernels == Bf16Kernels::kOneDnn ? "oneDNN" : "LibTorch's reference kernels";
}

const char* bf16_reference_rounding() {
  return "LibTorch's reference kernels accumulate NCHW convolutions and matrix products whose "
         "second operand is not transposed in bf16, rounding every partial sum to 8 bits of "
         "mantissa (oneDNN and bf16 units accumulate in fp32), so their error grows with the "
         "reduction length";
}

double measure_bf16_conv_speed_vs_fp32() {
  const Bf16KernelScope kernels;
  c10::InferenceMode no_autograd;
  const auto x = torch::randn({1, 64, 56, 56});  // [N, C, H, W]
  const auto w = torch::randn({64, 64, 3, 3});   // [O, C, kh, kw]
  const auto xb = x.to(torch::kBFloat16), wb = w.to(torch::kBFloat16);
  const auto seconds = [](const torch::Tensor& input, const torch::Tensor& weight) {
    const auto start = std::chrono::steady_clock::now();
    at::conv2d(input, weight, {}, 1, 1);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  seconds(x, w);  // warm-up: oneDNN creates its primitives on the first call
  seconds(xb, wb);
  // Alternating, so both see the same machine; the fastest call of each, over up to 10 rounds
  // or one second, since another process can stall any single call.
  double fp32 = std::numeric_limits<double>::infinity(), bf16 = fp32, spent = 0;
  for (int round = 0; round < 10 && spent < 1.0; ++round) {
    const double a = seconds(x, w), b = seconds(xb, wb);
    fp32 = std::min(fp32, a);
    bf16 = std::min(bf16, b);
    spent += a + b;
  }
  return fp32 / bf16;
}

}  // namespace plumb::run
