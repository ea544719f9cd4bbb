// Benchmark/cross-check: the cost model's multiply-accumulates against an independent count
// from the module tree, per layer, for every registered workload at its default size
// (batch 1, one inference step). The module-tree count uses only layer shapes and weights:
//   Conv2d: output elements x (C_in / groups) x kernel area; Linear: output elements x
//   in_features; LSTM layer: batch x (|W_ih| + |W_hh|) per call; attention: batch x source
//   positions x hidden per call (the context bmm).
// It prints per workload: module-tree MACs, profiled MACs, their ratio, and the FLOPs of the
// GEMM-like operators (those with MACs) divided by 2 x MACs (a MAC is 2 FLOPs; biases add a
// little).
#include <cstdio>
#include <map>
#include <string>

#include <c10/core/InferenceMode.h>

#include "plumb/core/layer_scope.h"
#include "plumb/profile/profiler.h"
#include "plumb/workloads/all_workloads.h"

namespace {

using plumb::LayerRecord;

double numel(const std::vector<int64_t>& shape) {
  double n = 1;
  for (auto d : shape) n *= static_cast<double>(d);
  return n;
}

// MACs per layer name from the module tree and the traced output shapes.
std::map<std::string, double> module_tree_macs(plumb::Model& model,
                                               const std::vector<LayerRecord>& records) {
  auto modules = model.module().named_modules("", false);
  std::map<std::string, const LayerRecord*> by_name;
  for (const auto& r : records) by_name[r.name] = &r;
  std::map<std::string, double> out;
  for (const auto& r : records) {
    const auto* found = modules.find(r.name);
    if (found == nullptr) continue;
    std::shared_ptr<torch::nn::Module> m = *found;
    if (m->as<torch::nn::Sequential>() != nullptr && !m->children().empty())
      m = m->children().front();  // projection shortcut: its conv has the block's output
    const double calls = static_cast<double>(r.calls);
    if (auto* conv = m->as<torch::nn::Conv2d>()) {
      const auto& k = *conv->options.kernel_size();
      out[r.name] += calls * numel(r.output_shape) *
                     static_cast<double>(conv->options.in_channels() / conv->options.groups()) *
                     static_cast<double>(k[0] * k[1]);
    } else if (auto* fc = m->as<torch::nn::Linear>()) {
      out[r.name] += calls * numel(r.output_shape) * static_cast<double>(fc->options.in_features());
    } else if (m->named_parameters(false).contains("weight_ih")) {
      const auto params = m->named_parameters(false);
      out[r.name] += calls * static_cast<double>(r.output_shape[0]) *
                     static_cast<double>(params["weight_ih"].numel() + params["weight_hh"].numel());
    } else if (r.name == "attention" && by_name.count("attention.memory_proj")) {
      const auto& mem = by_name["attention.memory_proj"]->output_shape;  // [B, S, H]
      out[r.name] += calls * numel(mem);
    }
  }
  return out;
}

}  // namespace

int main() {
  std::printf("%-10s %16s %16s %10s %14s\n", "workload", "module-tree MACs", "profiled MACs",
              "ratio", "GEMM FLOP/2MAC");
  for (const auto* w : plumb::workloads::default_registry().list()) {
    plumb::Config c = w->default_config();
    c.set_int("batch", 1);
    torch::manual_seed(0);
    auto model = w->build(c, torch::Device(torch::kCPU));
    model->module().eval();
    std::vector<LayerRecord> records;
    {
      c10::InferenceMode guard;
      plumb::LayerRecorder recorder;
      model->infer_step(model->make_batch());
      records = recorder.records();
    }
    double analytic = 0;
    for (const auto& [name, macs] : module_tree_macs(*model, records)) analytic += macs;

    plumb::run::RunOptions o;
    o.workload = w->info.name;
    o.mode = plumb::Mode::kInfer;
    o.config = c;
    o.max_warmup_s = 10;
    auto result = plumb::profile::profile_workload(*w, o, 1);
    double macs = 0, gemm_flops = 0;
    for (const auto& op : result.profile.ops) {
      macs += op.macs;
      if (op.macs > 0) gemm_flops += op.flops;  // GEMM-like ops, whatever their category
    }
    std::printf("%-10s %16.0f %16.0f %10.6f %14.6f\n", w->info.name.c_str(), analytic, macs,
                macs / analytic, gemm_flops / (2 * macs));
  }
  return 0;
}
