// plumb info's job (see info_job.h).
#include "plumb/jobs/info_job.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "plumb/core/errors.h"
#include "plumb/run/model_footprint.h"

namespace plumb::jobs {
namespace {

// "plumb::workloads::(anonymous namespace)::BottleneckImpl" -> "Bottleneck"
std::string short_module_type(const std::string& full) {
  std::string name = full.substr(full.rfind("::") == std::string::npos ? 0 : full.rfind("::") + 2);
  if (name.size() > 4 && name.compare(name.size() - 4, 4, "Impl") == 0)
    name.resize(name.size() - 4);
  return name;
}

// The recorded layers of `model` with their module types and parameter counts.
std::vector<InfoLayer> info_layers(Model* model, const std::vector<LayerRecord>& records) {
  auto modules = model->module().named_modules("", /*include_self=*/false);
  std::vector<InfoLayer> rows;
  for (const auto& r : records) {
    InfoLayer row{r, "", 0};
    if (const auto* m = modules.find(r.name)) {
      row.type = short_module_type((*m)->name());
      for (const auto& p : (*m)->parameters()) row.params += p.numel();
    }
    rows.push_back(row);
  }
  return rows;
}

int64_t config_value_or(const Config& config, const char* key, int64_t fallback) {
  return config.has(key) ? config.get_int(key) : fallback;
}

// Prefill over the config's prompt and one decode iteration at `context`, per token, at
// `batch` requests, fp32 weights and cache. An encoder has only the one pass over its sequence.
std::vector<TokenCostRow> token_cost_rows(const TransformerShape& shape, const Config& config,
                                          int64_t batch, std::optional<int64_t> context) {
  constexpr double kFp32 = 4;
  const int64_t prompt = config_value_or(config, "prompt", config_value_or(config, "seq", 1));
  const int64_t gen = config_value_or(config, "gen", 0);
  const auto per_token = [](ForwardCost cost, double tokens) {
    cost.flops /= tokens;
    cost.weight_bytes /= tokens;
    cost.kv_read_bytes /= tokens;
    cost.kv_write_bytes /= tokens;
    return cost;
  };
  std::vector<TokenCostRow> rows;
  const ForwardCost prefill = shape.causal
                                  ? prefill_cost(shape, batch, prompt, kFp32, kFp32)
                                  : forward_cost(shape, batch, prompt, prompt, 0, kFp32, kFp32);
  rows.push_back({Phase::kPrefill, batch, prompt, prompt,
                  per_token(prefill, static_cast<double>(batch * prompt))});
  if (shape.causal) {
    const int64_t at = context.value_or(prompt + std::max<int64_t>(gen, 1));
    if (at < 1 || at > shape.max_positions)
      throw UsageError(fmt::format("--context {} is outside 1..{}, the positions of this model", at,
                                   shape.max_positions));
    rows.push_back(
        {Phase::kDecode, batch, 1, at,
         per_token(decode_cost(shape, batch, at, kFp32, kFp32), static_cast<double>(batch))});
  }
  return rows;
}

}  // namespace

InfoJobResult run_info_job(const Workload& w, const InfoJobOptions& o) {
  InfoJobResult r;
  r.workload = &w;
  r.config = o.config;
  if (w.transformer_shape) {
    r.shape = w.transformer_shape(o.config);
    r.token_costs = token_cost_rows(*r.shape, o.config,
                                    o.batch_given ? o.config.get_int("batch") : 1, o.context);
    r.params = parameter_count(*r.shape);
    // A model beyond this machine's memory is described from its dimensions alone.
    run::RunOptions fp32_inference;
    fp32_inference.mode = Mode::kInfer;
    fp32_inference.config = o.config;
    fp32_inference.config.set_int("batch", 1);
    try {
      run::refuse_if_it_cannot_fit(w, fp32_inference);
    } catch (const UsageError& e) {
      r.layers_skipped = e.what();
      return r;
    }
  }
  // Parameters do not depend on the batch: build once at batch 1 for the layer trace.
  Config traced = o.config;
  traced.set_int("batch", 1);
  torch::manual_seed(0);
  auto model = w.build(traced, torch::Device(torch::kCPU));
  r.params = count_trainable_parameters(model->module());
  // One traced inference step gives both the layers with their output shapes and the work.
  std::vector<LayerRecord> records;
  r.forward = profile::forward_cost(*model, &records);
  r.layers = info_layers(model.get(), records);
  // Table 1 is per inference at a small batch: 1 unless --batch says otherwise.
  Config intensity_config = o.config;
  if (o.intensity) {
    if (!o.batch_given) intensity_config.set_int("batch", 1);
    r.traffic = trace_layer_traffic(w, intensity_config);
    r.summary = analysis::summarize_intensity(r.traffic->traffic.layers);
  }
  r.intensity_batch = intensity_config.get_int("batch");
  return r;
}

}  // namespace plumb::jobs
