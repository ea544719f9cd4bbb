// plumb project: the Facebook paper's Fig. 3 — a workload's inference projected onto a
// hypothetical accelerator (peak ops/s, DRAM bandwidth, on-chip memory of a given capacity
// and bandwidth) with a per-layer roofline and greedy on-chip allocation. Lists of on-chip
// capacities and bandwidths give the figure's curves.
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "plumb/analysis/projection.h"
#include "plumb/cli/commands.h"
#include "plumb/cli/config_options.h"
#include "plumb/cli/list_options.h"
#include "plumb/cli/table.h"
#include "plumb/core/errors.h"
#include "plumb/core/json_number.h"
#include "plumb/core/json_text.h"
#include "plumb/jobs/layer_traffic_trace.h"
#include "plumb/workloads/all_workloads.h"

namespace plumb::cli {
namespace {

struct ProjectFlags {
  double peak_tops = 100;  // the paper's hypothetical accelerator: 100 TOP/s ...
  double dram_gbs = 100;   // ... 100 GB/s DRAM ...
  std::string onchip_mb = "0,1,2,4,8,16,32,64,128,256";
  std::string onchip_gbs = "1000,10000";  // ... 1 TB/s (solid) and 10 TB/s (dashed)
  double element_bytes = 1;               // int8 parameters and activations, as in the paper
  bool layers = false;
  bool json = false;
};

nlohmann::ordered_json projection_json(const analysis::Projection& p, bool with_layers) {
  nlohmann::ordered_json j;
  j["time_s"] = p.time_s;
  j["achieved_ops_per_s"] = p.achieved_ops_per_s;
  j["onchip_weight_bytes"] = p.onchip_weight_bytes;
  if (!with_layers) return j;
  j["layers"] = nlohmann::ordered_json::array();
  for (const auto& l : p.layers)
    j["layers"].push_back({{"name", l.layer},
                           {"weights_onchip", l.weights_onchip},
                           {"activations_onchip", l.activations_onchip},
                           {"compute_s", l.compute_s},
                           {"dram_s", l.dram_s},
                           {"onchip_s", l.onchip_s},
                           {"time_s", l.time_s},
                           {"bound", l.bound}});
  return j;
}

}  // namespace

void add_project_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "project", "Project a workload's inference onto a hypothetical accelerator (Fig. 3)");
  auto name = std::make_shared<std::string>();
  auto f = std::make_shared<ProjectFlags>();
  auto overrides = std::make_shared<ConfigOverrides>();
  cmd->add_option("workload", *name, "Workload name (see plumb list)")->required();
  cmd->add_option("--peak-tops", f->peak_tops, "Accelerator peak, tera-ops/s")
      ->capture_default_str();
  cmd->add_option("--dram-gbs", f->dram_gbs, "Off-chip bandwidth, GB/s")->capture_default_str();
  cmd->add_option("--onchip-mb", f->onchip_mb, "On-chip capacities, MB (list)")
      ->capture_default_str();
  cmd->add_option("--onchip-gbs", f->onchip_gbs, "On-chip bandwidths, GB/s (list)")
      ->capture_default_str();
  cmd->add_option("--element-bytes", f->element_bytes,
                  "Bytes per weight/activation element on the accelerator (1 = int8)")
      ->capture_default_str();
  cmd->add_flag("--layers", f->layers, "Show per-layer placement and bound");
  cmd->add_flag("--json", f->json, "Print one JSON document on stdout");
  add_config_options(*cmd, *overrides);
  cmd->callback([name, f, overrides] {
    const Workload& w = workloads::default_registry().get(*name);
    if (!(f->peak_tops > 0) || !(f->dram_gbs > 0) || !(f->element_bytes > 0))
      throw UsageError("--peak-tops, --dram-gbs and --element-bytes must be positive");
    const auto capacities_mb = parse_number_list("--onchip-mb", f->onchip_mb, 0, false);
    const auto bandwidths_gbs = parse_number_list("--onchip-gbs", f->onchip_gbs, 0, true);
    Config config = resolve_config(w, *overrides);
    if (!overrides->batch_given) config.set_int("batch", 1);  // Fig. 3: one inference
    const jobs::ModelTraffic t = jobs::trace_layer_traffic(w, config);
    std::vector<analysis::LayerDemand> demands;
    for (size_t i = 0; i < t.traffic.layers.size(); ++i) {
      const auto& l = t.traffic.layers[i];
      // Weights occupy on-chip memory once (their distinct elements); activations per step.
      demands.push_back({l.layer, l.ops, t.traffic.parameter_elements[i] * f->element_bytes,
                         l.activation_elements * f->element_bytes});
    }
    nlohmann::ordered_json points = nlohmann::ordered_json::array();
    Table table({"on-chip MB", "on-chip GB/s", "time", "TOP/s", "of peak", "weights on-chip MB"});
    std::vector<std::pair<std::string, analysis::Projection>> detailed;
    for (double gbs : bandwidths_gbs) {
      for (double mb : capacities_mb) {
        const analysis::Accelerator acc{f->peak_tops * 1e12, f->dram_gbs * 1e9, mb * 1e6,
                                        gbs * 1e9};
        const auto p = analysis::project(demands, acc);
        auto j = projection_json(p, f->layers);
        j["onchip_mb"] = mb;
        j["onchip_gbs"] = gbs;
        points.push_back(j);
        table.add_row({format_number(mb, 0), format_number(gbs, 0), format_seconds(p.time_s),
                       format_number(p.achieved_ops_per_s / 1e12, 2),
                       format_percent(p.achieved_ops_per_s / acc.peak_ops_per_s),
                       format_number(p.onchip_weight_bytes / 1e6, 1)});
        if (f->layers) detailed.emplace_back(fmt::format("{} MB at {} GB/s", mb, gbs), p);
      }
    }
    if (f->json) {
      nlohmann::ordered_json out;
      out["workload"] = w.info.name;
      out["batch"] = config.get_int("batch");
      out["peak_ops_per_s"] = f->peak_tops * 1e12;
      out["dram_bytes_per_s"] = f->dram_gbs * 1e9;
      out["element_bytes"] = f->element_bytes;
      out["layers"] = demands.size();
      out["unmatched_layers"] = t.traffic.unmatched;
      out["points"] = points;
      std::cout << json_text(out, 2) << '\n';
      return;
    }
    std::cout << fmt::format(
        "{} inference at batch {} on a {} TOP/s accelerator with {} GB/s DRAM ({} compute "
        "layers, {} byte(s) per element):\n",
        w.info.name, config.get_int("batch"), format_number(f->peak_tops, 0),
        format_number(f->dram_gbs, 0), demands.size(), format_number(f->element_bytes, 0));
    table.print(std::cout);
    for (const auto& [label, p] : detailed) {
      std::cout << "\n" << label << ":\n";
      Table lt({"layer", "weights", "activations", "time", "bound"});
      for (const auto& l : p.layers)
        lt.add_row({l.layer, l.weights_onchip ? "on-chip" : "DRAM",
                    l.activations_onchip ? "on-chip" : "DRAM", format_seconds(l.time_s), l.bound});
      lt.print(std::cout);
    }
  });
}

}  // namespace plumb::cli
