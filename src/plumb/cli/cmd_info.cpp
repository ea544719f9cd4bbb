// plumb info: a workload's description, resolved config, trainable parameter count and layer
// list with output shapes (from one traced inference step at batch 1).
#include <iostream>

#include <c10/core/InferenceMode.h>
#include <nlohmann/json.hpp>

#include "plumb/cli/commands.h"
#include "plumb/cli/config_options.h"
#include "plumb/cli/table.h"
#include "plumb/core/layer_scope.h"
#include "plumb/core/text.h"
#include "plumb/workloads/all_workloads.h"

namespace plumb::cli {
namespace {

// "plumb::workloads::(anonymous namespace)::BottleneckImpl" -> "Bottleneck"
std::string short_type(const std::string& full) {
  std::string name = full.substr(full.rfind("::") == std::string::npos ? 0 : full.rfind("::") + 2);
  if (name.size() > 4 && name.compare(name.size() - 4, 4, "Impl") == 0)
    name.resize(name.size() - 4);
  return name;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::vector<std::string> dims;
  for (auto d : shape) dims.push_back(std::to_string(d));
  return "[" + join(dims, ", ") + "]";
}

struct LayerRow {
  LayerRecord record;
  std::string type;
  int64_t params = 0;
};

// Layers of `model` (built at batch 1) with output shapes from one traced inference step.
std::vector<LayerRow> trace_layers(Model* model) {
  auto modules = model->module().named_modules("", /*include_self=*/false);
  std::vector<LayerRecord> records;
  {
    model->module().eval();
    c10::InferenceMode no_autograd;
    LayerRecorder recorder;
    model->infer_step(model->make_batch());
    records = recorder.records();
  }
  std::vector<LayerRow> rows;
  for (const auto& r : records) {
    LayerRow row{r, "", 0};
    if (const auto* m = modules.find(r.name)) {
      row.type = short_type((*m)->name());
      for (const auto& p : (*m)->parameters()) row.params += p.numel();
    }
    rows.push_back(row);
  }
  return rows;
}

}  // namespace

void add_info_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("info", "Describe a workload: config, parameters, layers");
  auto name = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  auto overrides = std::make_shared<ConfigOverrides>();
  cmd->add_option("workload", *name, "Workload name (see plumb list)")->required();
  add_config_options(*cmd, *overrides);
  cmd->add_flag("--json", *json, "Print one JSON document on stdout");
  cmd->callback([name, json, overrides] {
    const Workload& w = workloads::default_registry().get(*name);
    Config config = resolve_config(w, *overrides);
    // Parameters do not depend on the batch: build once at batch 1 for the layer trace.
    Config traced = config;
    traced.set_int("batch", 1);
    torch::manual_seed(0);
    auto model = w.build(traced, torch::Device(torch::kCPU));
    const int64_t params = count_trainable_parameters(model->module());
    const auto layers = trace_layers(model.get());
    if (*json) {
      nlohmann::ordered_json out;
      out["name"] = w.info.name;
      out["suites"] = w.info.suites;
      out["domain"] = w.info.domain;
      out["description"] = w.info.description;
      out["source"] = w.info.source;
      out["throughput_unit"] = w.info.throughput_unit;
      out["params"] = params;
      out["config"] = config.to_json();
      out["layers"] = nlohmann::ordered_json::array();
      for (const auto& l : layers)
        out["layers"].push_back({{"name", l.record.name},
                                 {"type", l.type},
                                 {"params", l.params},
                                 {"output_shape", l.record.output_shape},
                                 {"calls", l.record.calls}});
      std::cout << out.dump(2) << '\n';
      return;
    }
    std::cout << w.info.name << ": " << w.info.description << "\n"
              << "source: " << w.info.source << "\n"
              << "suites: " << join(w.info.suites, ", ") << "; domain: " << w.info.domain
              << "; throughput unit: " << w.info.throughput_unit << "\n"
              << "trainable parameters: " << format_count(params) << "\n\n";
    Table cfg({"config", "value", "meaning"});
    for (const auto& e : config.entries()) cfg.add_row({e.key, Config::value_text(e.value), e.doc});
    cfg.print(std::cout);
    std::cout << "\nlayers (one inference step at batch 1; calls > 1 for recurrent steps):\n";
    Table table({"layer", "type", "params", "output shape", "calls"});
    for (const auto& l : layers)
      table.add_row({l.record.name, l.type, format_count(l.params),
                     shape_text(l.record.output_shape), std::to_string(l.record.calls)});
    table.print(std::cout);
  });
}

}  // namespace plumb::cli
