// How fast one decode token's matrix products stream GPT-2's weights through each kernel plumb
// can run them with: fp32 sgemv (torch::addmv, plumb's fp32 batch-1 decode), LibTorch's dynamic
// int8 linear (quantized::linear_dynamic, oneDNN), and plumb's weight-only int8 kernel
// (run/int8_weight_gemv.h) on every vector path this CPU runs; with rows > 1 (a batched decode)
// fp32 sgemm (aten::linear) and two alternatives to it. Each product has its own weight
// copy, so every call streams its matrix from memory as a decode does (a GPT-2 small token
// reads 472 MiB of fp32 weights, 118 MiB of int8). The kernels alternate within each round, so
// the ratios compare like with like on a shared machine. Run on an idle machine:
//   ./build/bench/plumb_bench_int8_gemv [layers=12] [d_model=768] [vocab=50257] [rows=1]
//                                       [rounds=5] [threads=2]
#include <ATen/Parallel.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "plumb/run/int8_weight_gemv.h"

namespace {

struct Product {
  torch::Tensor weight;  // [O, I] fp32
  torch::Tensor bias;    // [O] or undefined (the tied output projection)
  plumb::run::Int8Rows rows;
  c10::IValue packed;           // oneDNN's prepacked per-channel int8 weight
  torch::Tensor onednn_weight;  // the fp32 weight as a oneDNN tensor (LibTorch 1.13 exposes no
                                // reorder for linear weights)
};

double seconds_of(const std::function<void()>& token) {
  const auto start = std::chrono::steady_clock::now();
  token();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace plumb::run;
  const int64_t layers = argc > 1 ? std::atoll(argv[1]) : 12;
  const int64_t d = argc > 2 ? std::atoll(argv[2]) : 768;
  const int64_t vocab = argc > 3 ? std::atoll(argv[3]) : 50257;
  const int64_t rows = argc > 4 ? std::atoll(argv[4]) : 1;
  const int rounds = argc > 5 ? std::atoi(argv[5]) : 5;
  at::set_num_threads(argc > 6 ? std::atoi(argv[6]) : 2);
  at::globalContext().setQEngine(at::QEngine::ONEDNN);
  torch::NoGradGuard no_grad;

  static const auto prepack =
      c10::Dispatcher::singleton().findSchemaOrThrow("quantized::linear_prepack", "");
  static const auto dynamic =
      c10::Dispatcher::singleton().findSchemaOrThrow("quantized::linear_dynamic", "");
  // A layer's q, k, v, o, up and down projections, then the tied output projection.
  std::vector<Product> token;
  auto add = [&](int64_t out, int64_t in, bool bias) {
    Product p;
    p.weight = torch::randn({out, in}) * 0.02;
    if (bias) p.bias = torch::zeros({out});
    p.rows = quantize_rows(p.weight);
    auto q = at::quantize_per_channel(p.weight, p.rows.scales.to(at::kDouble),
                                      torch::zeros({out}, torch::kLong), 0, at::kQInt8);
    torch::jit::Stack stack{q, c10::IValue()};
    prepack.callBoxed(&stack);
    p.packed = stack.at(0);
    p.onednn_weight = p.weight.to_mkldnn();
    token.push_back(std::move(p));
  };
  for (int64_t l = 0; l < layers; ++l) {
    for (int i = 0; i < 4; ++i) add(d, d, true);
    add(4 * d, d, true);
    add(d, 4 * d, true);
  }
  add(vocab, d, false);
  double fp32_bytes = 0, int8_bytes = 0;
  for (const Product& p : token) {
    fp32_bytes += static_cast<double>(p.weight.numel()) * 4;
    int8_bytes += static_cast<double>(p.weight.numel()) + static_cast<double>(p.weight.size(0)) * 4;
  }

  std::vector<std::pair<std::string, std::function<void()>>> kernels;
  // Room for every kernel below: no regrowth, on which GCC 12 warns falsely (-Warray-bounds).
  kernels.reserve(8);
  kernels.emplace_back(rows == 1 ? "fp32 addmv (sgemv)" : "fp32 linear (sgemm)", [&] {
    for (const Product& p : token) {
      const auto x = torch::randn({rows, p.weight.size(1)});
      if (rows == 1)
        p.bias.defined() ? torch::addmv(p.bias, p.weight, x.view({-1}))
                         : torch::mv(p.weight, x.view({-1}));
      else
        torch::linear(x, p.weight,
                      p.bias.defined() ? c10::optional<torch::Tensor>(p.bias) : c10::nullopt);
    }
  });
  // The same fp32 products through oneDNN's inner product on a oneDNN weight tensor (LibTorch's
  // mkldnn_linear: it reorders the weight at every call, LibTorch 1.13 exposing no prepack for
  // it), and as OpenBLAS sgemm over one slice of output features per thread (each thread packs
  // only its slice): candidates for the small-row products of a batched decode, where one sgemm
  // streams the weights far below sgemv's rate.
  kernels.emplace_back("fp32 oneDNN inner product", [&] {
    for (const Product& p : token) {
      const auto x = torch::randn({rows, p.weight.size(1)}).to_mkldnn();
      at::mkldnn_linear(x, p.onednn_weight,
                        p.bias.defined() ? c10::optional<torch::Tensor>(p.bias) : c10::nullopt)
          .to_dense();
    }
  });
  kernels.emplace_back("fp32 sgemm, output slice per thread", [&] {
    for (const Product& p : token) {
      const auto x = torch::randn({rows, p.weight.size(1)});
      auto y = torch::empty({rows, p.weight.size(0)});
      const int64_t out = p.weight.size(0);
      at::parallel_for(0, out, (out + at::get_num_threads() - 1) / at::get_num_threads(),
                       [&](int64_t begin, int64_t end) {
                         y.narrow(1, begin, end - begin)
                             .copy_(torch::mm(x, p.weight.narrow(0, begin, end - begin).t()));
                       });
      if (p.bias.defined()) y.add_(p.bias);
    }
  });
  kernels.emplace_back("int8 quantized::linear_dynamic", [&] {
    for (const Product& p : token) {
      torch::jit::Stack stack{torch::randn({rows, p.weight.size(1)}), p.packed, false};
      dynamic.callBoxed(&stack);
    }
  });
  for (GemvIsa isa : {GemvIsa::kPortable, GemvIsa::kAvx2, GemvIsa::kAvx512}) {
    if (static_cast<int>(isa) > static_cast<int>(widest_gemv_isa())) continue;
    kernels.emplace_back("int8 plumb weight-only, " + gemv_isa_name(isa), [&token, rows, isa] {
      for (const Product& p : token) {
        auto y = int8_weight_gemv(torch::randn({rows, p.weight.size(1)}), p.rows.codes,
                                  p.rows.scales, isa);
        if (p.bias.defined()) y.add_(p.bias);
      }
    });
  }

  std::printf(
      "%zu products a token (%lld layers, d_model %lld, vocab %lld), %lld row(s), %d threads\n",
      token.size(), static_cast<long long>(layers), static_cast<long long>(d),
      static_cast<long long>(vocab), static_cast<long long>(rows), at::get_num_threads());
  std::vector<std::vector<double>> times(kernels.size());
  for (auto& k : kernels) k.second();  // warm-up: page in every copy once
  for (int round = 0; round < rounds; ++round)
    for (size_t k = 0; k < kernels.size(); ++k) times[k].push_back(seconds_of(kernels[k].second));
  const double fp32_ms = *std::min_element(times[0].begin(), times[0].end()) * 1e3;
  std::printf("%-36s %10s %10s %10s %12s\n", "kernel", "best ms", "median ms", "GB/s", "vs fp32");
  for (size_t k = 0; k < kernels.size(); ++k) {
    auto t = times[k];
    std::sort(t.begin(), t.end());
    const double bytes = kernels[k].first.rfind("fp32", 0) == 0 ? fp32_bytes : int8_bytes;
    std::printf("%-36s %10.2f %10.2f %10.2f %11.2fx\n", kernels[k].first.c_str(), t.front() * 1e3,
                t[t.size() / 2] * 1e3, bytes / t.front() / 1e9, fp32_ms / (t.front() * 1e3));
  }
  return 0;
}
