// plumb info: a workload's description, resolved config, trainable parameter count and layer
// list with output shapes (from one traced inference step at batch 1).
#include <iostream>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "plumb/analysis/intensity.h"
#include "plumb/cli/commands.h"
#include "plumb/cli/config_options.h"
#include "plumb/cli/table.h"
#include "plumb/core/json_number.h"
#include "plumb/core/json_text.h"
#include "plumb/core/layer_scope.h"
#include "plumb/core/text.h"
#include "plumb/jobs/layer_traffic_trace.h"
#include "plumb/profile/forward_cost.h"
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

// The recorded layers of `model` with their module types and parameter counts.
std::vector<LayerRow> layer_rows(Model* model, const std::vector<LayerRecord>& records) {
  auto modules = model->module().named_modules("", /*include_self=*/false);
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

// Facebook Table 1: ops per element of traffic, per compute layer and for the model.
nlohmann::ordered_json intensity_json(const jobs::ModelTraffic& t,
                                      const analysis::IntensitySummary& s, int64_t batch) {
  nlohmann::ordered_json j;
  j["batch"] = batch;
  j["element_bytes"] = t.element_bytes;
  j["model_ops_per_weight"] = json_number(s.model_per_weight);
  j["model_ops_per_weight_and_activation"] = json_number(s.model_per_weight_and_activation);
  j["mean_ops_per_weight"] = json_number(s.mean_per_weight);
  j["min_ops_per_weight"] = json_number(s.min_per_weight);
  j["mean_ops_per_weight_and_activation"] = json_number(s.mean_per_weight_and_activation);
  j["min_ops_per_weight_and_activation"] = json_number(s.min_per_weight_and_activation);
  j["layers"] = nlohmann::ordered_json::array();
  for (size_t i = 0; i < s.layers.size(); ++i) {
    const auto& l = s.layers[i];
    const auto& in = t.traffic.layers[i];
    j["layers"].push_back(
        {{"name", l.layer},
         {"ops", l.ops},
         {"parameters", t.traffic.parameter_elements[i]},
         {"weight_elements", in.weight_elements},
         {"activation_elements", in.activation_elements},
         {"ops_per_weight", json_number(l.per_weight)},
         {"ops_per_weight_and_activation", json_number(l.per_weight_and_activation)}});
  }
  j["unmatched_layers"] = t.traffic.unmatched;
  return j;
}

void print_intensity(const jobs::ModelTraffic& t, const analysis::IntensitySummary& s,
                     int64_t batch) {
  std::cout << "\narithmetic intensity (Facebook Table 1; ops per element of traffic, one "
               "inference step at batch "
            << batch << "; BN/activation/pooling fused into the layer before them):\n";
  Table table({"layer", "GOP", "weights", "activations", "ops/weight", "ops/(weight+act)"});
  for (size_t i = 0; i < s.layers.size(); ++i) {
    const auto& l = s.layers[i];
    const auto& in = t.traffic.layers[i];
    table.add_row({l.layer, format_number(l.ops / 1e9, 3),
                   format_count(static_cast<long long>(in.weight_elements)),
                   format_count(static_cast<long long>(in.activation_elements)),
                   format_number(l.per_weight, 1), format_number(l.per_weight_and_activation, 1)});
  }
  table.print(std::cout);
  std::cout << fmt::format(
      "model: {} ops/weight (avg.), min {}; {} ops/(weight+activation) (avg.), min {}  "
      "[avg. = total ops / total traffic; unweighted layer means {} and {}]\n",
      format_number(s.model_per_weight, 1), format_number(s.min_per_weight, 1),
      format_number(s.model_per_weight_and_activation, 1),
      format_number(s.min_per_weight_and_activation, 1), format_number(s.mean_per_weight, 1),
      format_number(s.mean_per_weight_and_activation, 1));
  if (!t.traffic.unmatched.empty())
    std::cout << "layers with compute but no parameters of their own (left out): "
              << join(t.traffic.unmatched, ", ") << '\n';
}

}  // namespace

void add_info_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("info", "Describe a workload: config, parameters, layers");
  auto name = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  auto intensity = std::make_shared<bool>(false);
  auto overrides = std::make_shared<ConfigOverrides>();
  cmd->add_option("workload", *name, "Workload name (see plumb list)")->required();
  add_config_options(*cmd, *overrides);
  cmd->add_flag("--json", *json, "Print one JSON document on stdout");
  cmd->add_flag("--intensity", *intensity,
                "Also trace the arithmetic intensity per layer (Facebook Table 1) at --batch "
                "(default 1)");
  cmd->callback([name, json, intensity, overrides] {
    const Workload& w = workloads::default_registry().get(*name);
    Config config = resolve_config(w, *overrides);
    // Parameters do not depend on the batch: build once at batch 1 for the layer trace.
    Config traced = config;
    traced.set_int("batch", 1);
    torch::manual_seed(0);
    auto model = w.build(traced, torch::Device(torch::kCPU));
    const int64_t params = count_trainable_parameters(model->module());
    // One traced inference step gives both the layers with their output shapes and the work.
    std::vector<LayerRecord> records;
    const profile::ForwardCost forward = profile::forward_cost(*model, &records);
    const auto layers = layer_rows(model.get(), records);
    // Table 1 is per inference at a small batch: 1 unless --batch says otherwise.
    std::optional<jobs::ModelTraffic> traffic;
    std::optional<analysis::IntensitySummary> summary;
    Config intensity_config = config;
    if (*intensity) {
      if (!overrides->batch_given) intensity_config.set_int("batch", 1);
      traffic = jobs::trace_layer_traffic(w, intensity_config);
      summary = analysis::summarize_intensity(traffic->traffic.layers);
    }
    const int64_t intensity_batch = intensity_config.get_int("batch");
    if (*json) {
      nlohmann::ordered_json out;
      out["name"] = w.info.name;
      out["suites"] = w.info.suites;
      out["domain"] = w.info.domain;
      out["description"] = w.info.description;
      out["source"] = w.info.source;
      out["throughput_unit"] = w.info.throughput_unit;
      out["params"] = params;
      out["forward_macs"] = forward.macs;
      out["forward_flops"] = forward.flops;
      out["config"] = config.to_json();
      out["layers"] = nlohmann::ordered_json::array();
      for (const auto& l : layers)
        out["layers"].push_back({{"name", l.record.name},
                                 {"type", l.type},
                                 {"params", l.params},
                                 {"output_shape", l.record.output_shape},
                                 {"calls", l.record.calls}});
      if (traffic) out["intensity"] = intensity_json(*traffic, *summary, intensity_batch);
      std::cout << json_text(out, 2) << '\n';
      return;
    }
    std::cout << w.info.name << ": " << w.info.description << "\n"
              << "source: " << w.info.source << "\n"
              << "suites: " << join(w.info.suites, ", ") << "; domain: " << w.info.domain
              << "; throughput unit: " << w.info.throughput_unit << "\n"
              << "trainable parameters: " << format_count(params) << "\n"
              << "forward pass of one example: " << format_number(forward.macs / 1e9, 3)
              << " GMACs (convolution, linear, "
              << "matrix products), " << format_number(forward.flops / 1e9, 3)
              << " GFLOPs (all costed operators)\n\n";
    Table cfg({"config", "value", "meaning"});
    for (const auto& e : config.entries()) cfg.add_row({e.key, Config::value_text(e.value), e.doc});
    cfg.print(std::cout);
    std::cout << "\nlayers (one inference step at batch 1; calls > 1 for recurrent steps):\n";
    Table table({"layer", "type", "params", "output shape", "calls"});
    for (const auto& l : layers)
      table.add_row({l.record.name, l.type, format_count(l.params),
                     shape_text(l.record.output_shape), std::to_string(l.record.calls)});
    table.print(std::cout);
    if (traffic) print_intensity(*traffic, *summary, intensity_batch);
  });
}

}  // namespace plumb::cli
