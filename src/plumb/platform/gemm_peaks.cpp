// GEMM timings per dtype and library (see gemm_peaks.h).
#include "plumb/platform/gemm_peaks.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <limits>

#include <torch/torch.h>
#if PLUMB_WITH_ONEDNN
#include <oneapi/dnnl/dnnl.hpp>
#endif

#include "plumb/core/dtype.h"
#include "plumb/run/thread_count.h"

namespace plumb::platform {
namespace {

// Best wall time of one call: one untimed call first (first-touch, kernel selection), then
// calls until the budget is spent, at least three.
double best_call_seconds(const std::function<void()>& call, double budget_s) {
  using GemmClock = std::chrono::steady_clock;
  call();
  double best = std::numeric_limits<double>::infinity();
  const auto start = GemmClock::now();
  for (int n = 0;
       n < 3 || std::chrono::duration<double>(GemmClock::now() - start).count() < budget_s; ++n) {
    const auto t0 = GemmClock::now();
    call();
    best = std::min(best, std::chrono::duration<double>(GemmClock::now() - t0).count());
  }
  return best;
}

constexpr const char* kTorchMmName = "openblas (libtorch mm)";
constexpr const char* kOneDnnName = "onednn matmul";

// LibTorch 1.13's CPU mm is fast (OpenBLAS s/dgemm) for the 4- and 8-byte floating types only.
bool torch_mm_runs(const DtypeInfo& row) {
  return row.floating && row.element_bytes >= 4;
}

// LibTorch's own CPU GEMM for fp32/fp64 is OpenBLAS (s/dgemm): what the workloads' linear
// layers run on. Batched shapes go through bmm (a loop of GEMMs in 1.13).
GemmPeak torch_mm(const std::string& dtype, const GemmShape& s, int threads, double seconds) {
  GemmPeak p{dtype, kTorchMmName, {OutcomeState::kUnsupported, ""}, "at::mm", s, threads, 0};
  const auto row = dtype_from_name(dtype);
  if (!row || !torch_mm_runs(dtype_info(*row))) {
    p.outcome.reason =
        "LibTorch's CPU mm has no fast " + dtype + " kernel; oneDNN's matmul runs it";
    return p;
  }
  torch::NoGradGuard no_grad;
  const auto options = torch::TensorOptions().dtype(dtype_info(*row).scalar_types.front());
  const bool batched = s.batch > 1;
  if (batched) p.implementation = "at::bmm";
  const auto a = batched ? torch::full({s.batch, s.m, s.k}, 0.5, options)
                         : torch::full({s.m, s.k}, 0.5, options);
  const auto b = batched ? torch::full({s.batch, s.k, s.n}, 0.25, options)
                         : torch::full({s.k, s.n}, 0.25, options);
  auto c = batched ? torch::empty({s.batch, s.m, s.n}, options) : torch::empty({s.m, s.n}, options);
  p.ops_per_s = 2 * s.macs() /
                best_call_seconds(
                    [&] {
                      if (batched)
                        at::bmm_out(c, a, b);
                      else
                        at::mm_out(c, a, b);
                    },
                    seconds);
  p.outcome = Outcome::success();
  return p;
}

#if PLUMB_WITH_ONEDNN
struct DnnlTypes {
  Dtype dtype;
  dnnl::memory::data_type src, weights, dst;
  uint32_t one_bits;  // the bit pattern of 1 in the source type (fills the inputs)
  size_t src_size;
};

// bf16 accumulates in fp32 and fp16 in fp16, as the libraries do for inference GEMMs; int8 is
// u8 x s8 -> s32, the VNNI form.
const DnnlTypes* dnnl_types(const std::string& dtype) {
  using dt = dnnl::memory::data_type;
  static const DnnlTypes types[] = {{Dtype::kFp32, dt::f32, dt::f32, dt::f32, 0x3f800000u, 4},
                                    {Dtype::kBf16, dt::bf16, dt::bf16, dt::f32, 0x3f80u, 2},
                                    {Dtype::kFp16, dt::f16, dt::f16, dt::f16, 0x3c00u, 2},
                                    {Dtype::kInt8, dt::u8, dt::s8, dt::s32, 1u, 1}};
  const auto row = dtype_from_name(dtype);
  for (const auto& t : types)
    if (row == t.dtype) return &t;
  return nullptr;
}

GemmPeak onednn(const std::string& dtype, const GemmShape& s, int threads, double seconds) {
  using dnnl::memory;
  GemmPeak p{dtype, kOneDnnName, {OutcomeState::kUnsupported, ""}, "", s, threads, 0};
  const DnnlTypes* t = dnnl_types(dtype);
  if (t == nullptr) {
    p.outcome.reason = "plumb runs oneDNN's matmul in fp32, bf16, fp16 and int8 only";
    return p;
  }
  try {
    dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    dnnl::stream stream(engine);
    const bool batched = s.batch > 1;
    const auto dims = [&](int64_t rows, int64_t cols) {
      return batched ? memory::dims{s.batch, rows, cols} : memory::dims{rows, cols};
    };
    const auto tag = batched ? memory::format_tag::abc : memory::format_tag::ab;
    const memory::desc a_md(dims(s.m, s.k), t->src, tag);
    const memory::desc b_md(dims(s.k, s.n), t->weights, tag);
    const memory::desc c_md(dims(s.m, s.n), t->dst, tag);
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), engine);
    p.implementation = pd.impl_info_str();
    if (p.implementation.rfind("ref", 0) == 0) {
      p.outcome.reason = "oneDNN has only its reference kernel (" + p.implementation +
                         ") for this dtype on this CPU";
      return p;
    }
    memory a(a_md, engine), b(b_md, engine), c(c_md, engine);
    for (memory* m : {&a, &b}) {
      auto* bytes = static_cast<unsigned char*>(m->get_data_handle());
      for (size_t i = 0; i < m->get_desc().get_size(); i += t->src_size)
        std::memcpy(bytes + i, &t->one_bits, t->src_size);
    }
    const dnnl::matmul matmul(pd);
    p.ops_per_s =
        2 * s.macs() /
        best_call_seconds(
            [&] {
              matmul.execute(stream, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
              stream.wait();
            },
            seconds);
    p.outcome = Outcome::success();
  } catch (const dnnl::error& e) {
    p.outcome.reason = std::string("oneDNN cannot run this dtype here: ") + e.what();
  }
  return p;
}
#else
// Built without oneDNN's headers (a LibTorch that bundles oneDNN privately, as PyTorch wheels
// do): the matmul ceilings are not measured.
GemmPeak onednn(const std::string& dtype, const GemmShape& s, int threads, double) {
  GemmPeak p{dtype, kOneDnnName, {OutcomeState::kUnsupported, ""}, "", s, threads, 0};
  p.outcome.reason = "this plumb was built without oneDNN (Debian: apt-get install libdnnl-dev)";
  return p;
}
#endif

}  // namespace

GemmPeak measure_gemm(const std::string& dtype, GemmLibrary library, const GemmShape& shape,
                      int threads, double seconds) {
  return library == GemmLibrary::kTorchMm ? torch_mm(dtype, shape, threads, seconds)
                                          : onednn(dtype, shape, threads, seconds);
}

std::vector<GemmPeak> measure_gemm_peaks(int64_t size, const std::vector<int>& threads,
                                         double seconds) {
  const GemmShape square{1, size, size, size};
  std::vector<GemmPeak> out;
  for (int n : threads) {
    // LibTorch and oneDNN share the OpenMP runtime; OpenBLAS has its own pool: both follow.
    run::ScopedThreadCount threads_for(n);
    for (const DtypeInfo& row : dtype_table())
      if (torch_mm_runs(row))
        out.push_back(measure_gemm(row.name, GemmLibrary::kTorchMm, square, n, seconds));
    // oneDNN's matmul in every precision a run may take.
    for (const DtypeInfo& row : dtype_table())
      if (row.run_precision)
        out.push_back(measure_gemm(row.name, GemmLibrary::kOneDnn, square, n, seconds));
  }
  return out;
}

}  // namespace plumb::platform
