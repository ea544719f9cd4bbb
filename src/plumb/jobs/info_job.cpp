// plumb info's job (see info_job.h).
#include "plumb/jobs/info_job.h"

#include <utility>

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

}  // namespace

InfoJobResult run_info_job(const Workload& w, const InfoJobOptions& o) {
  InfoJobResult r;
  r.workload = &w;
  r.config = o.config;
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
