// GEMM ceilings per dtype and library (see gemm_peaks.h).
#include "plumb/platform/gemm_peaks.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <limits>

#include <ATen/Parallel.h>
#include <torch/torch.h>
#include <oneapi/dnnl/dnnl.hpp>

#include "plumb/run/runner.h"

namespace plumb::platform {
namespace {

// Best wall time of one call: one untimed call first (first-touch, kernel selection), then
// calls until the budget is spent, at least three.
double best_call_seconds(const std::function<void()>& call, double budget_s) {
  using Clock = std::chrono::steady_clock;
  call();
  double best = std::numeric_limits<double>::infinity();
  const auto start = Clock::now();
  for (int n = 0; n < 3 || std::chrono::duration<double>(Clock::now() - start).count() < budget_s;
       ++n) {
    const auto t0 = Clock::now();
    call();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return best;
}

double gemm_ops(int64_t size) {
  return 2.0 * static_cast<double>(size) * static_cast<double>(size) * static_cast<double>(size);
}

// LibTorch's own CPU GEMM for fp32/fp64 is OpenBLAS (s/dgemm): what the workloads' linear
// layers run on.
GemmPeak torch_mm(const char* dtype, torch::ScalarType type, int64_t size, int threads,
                  double seconds) {
  GemmPeak p{dtype, "openblas (libtorch mm)", true, "", "at::mm", size, threads, 0};
  torch::NoGradGuard no_grad;
  const auto options = torch::TensorOptions().dtype(type);
  const auto a = torch::full({size, size}, 0.5, options);
  const auto b = torch::full({size, size}, 0.25, options);
  auto c = torch::empty({size, size}, options);
  p.ops_per_s = gemm_ops(size) / best_call_seconds([&] { at::mm_out(c, a, b); }, seconds);
  return p;
}

struct DnnlTypes {
  const char* dtype;
  dnnl::memory::data_type src, weights, dst;
  uint32_t one_bits;  // the bit pattern of 1 in the source type (fills the inputs)
  size_t src_size;
};

GemmPeak onednn(const DnnlTypes& t, int64_t size, int threads, double seconds) {
  using dnnl::memory;
  GemmPeak p{t.dtype, "onednn matmul", false, "", "", size, threads, 0};
  try {
    dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    dnnl::stream stream(engine);
    const memory::dims dims = {size, size};
    const memory::desc a_md(dims, t.src, memory::format_tag::ab);
    const memory::desc b_md(dims, t.weights, memory::format_tag::ab);
    const memory::desc c_md(dims, t.dst, memory::format_tag::ab);
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), engine);
    p.implementation = pd.impl_info_str();
    if (p.implementation.rfind("ref", 0) == 0) {
      p.reason = "oneDNN has only its reference kernel (" + p.implementation +
                 ") for this dtype on this CPU";
      return p;
    }
    memory a(a_md, engine), b(b_md, engine), c(c_md, engine);
    for (memory* m : {&a, &b}) {
      auto* bytes = static_cast<unsigned char*>(m->get_data_handle());
      for (size_t i = 0; i < m->get_desc().get_size(); i += t.src_size)
        std::memcpy(bytes + i, &t.one_bits, t.src_size);
    }
    const dnnl::matmul matmul(pd);
    p.ops_per_s =
        gemm_ops(size) /
        best_call_seconds(
            [&] {
              matmul.execute(stream, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
              stream.wait();
            },
            seconds);
    p.supported = true;
  } catch (const dnnl::error& e) {
    p.reason = std::string("oneDNN cannot run this dtype here: ") + e.what();
  }
  return p;
}

}  // namespace

std::vector<GemmPeak> measure_gemm_peaks(int64_t size, const std::vector<int>& threads,
                                         double seconds) {
  using dt = dnnl::memory::data_type;
  // bf16 and fp16 accumulate in fp32 (bf16) or fp16 as the libraries do for inference GEMMs;
  // int8 is u8 x s8 -> s32, the VNNI form.
  const DnnlTypes types[] = {{"fp32", dt::f32, dt::f32, dt::f32, 0x3f800000u, 4},
                             {"bf16", dt::bf16, dt::bf16, dt::f32, 0x3f80u, 2},
                             {"fp16", dt::f16, dt::f16, dt::f16, 0x3c00u, 2},
                             {"int8", dt::u8, dt::s8, dt::s32, 1u, 1}};
  const int previous = at::get_num_threads();
  std::vector<GemmPeak> out;
  for (int n : threads) {
    // LibTorch and oneDNN share the OpenMP runtime; OpenBLAS has its own pool: both follow.
    run::apply_threads(n);
    out.push_back(torch_mm("fp32", torch::kFloat32, size, n, seconds));
    out.push_back(torch_mm("fp64", torch::kFloat64, size, n, seconds));
    for (const auto& t : types) out.push_back(onednn(t, size, n, seconds));
  }
  run::apply_threads(previous);
  return out;
}

}  // namespace plumb::platform
