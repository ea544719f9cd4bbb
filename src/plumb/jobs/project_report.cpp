// plumb project's reporters (see project_report.h).
#include "plumb/jobs/project_report.h"

#include <fmt/format.h>

#include "plumb/report/text_table.h"

namespace plumb::jobs {
namespace {

using report::format_number;
using report::format_seconds;

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

nlohmann::ordered_json project_json(const ProjectJobResult& r, bool with_layers) {
  nlohmann::ordered_json points = nlohmann::ordered_json::array();
  for (const auto& p : r.points) {
    auto j = projection_json(p.projection, with_layers);
    j["onchip_mb"] = p.onchip_mb;
    j["onchip_gbs"] = p.onchip_gbs;
    points.push_back(j);
  }
  nlohmann::ordered_json out;
  out["workload"] = r.workload;
  out["batch"] = r.batch;
  out["peak_ops_per_s"] = r.options.peak_tops * 1e12;
  out["dram_bytes_per_s"] = r.options.dram_gbs * 1e9;
  out["element_bytes"] = r.options.element_bytes;
  out["layers"] = r.layers;
  out["unmatched_layers"] = r.unmatched;
  out["points"] = points;
  return out;
}

void print_project(std::ostream& out, const ProjectJobResult& r, bool with_layers) {
  out << fmt::format(
      "{} inference at batch {} on a {} TOP/s accelerator with {} GB/s DRAM ({} compute "
      "layers, {} byte(s) per element):\n",
      r.workload, r.batch, format_number(r.options.peak_tops, 0),
      format_number(r.options.dram_gbs, 0), r.layers, format_number(r.options.element_bytes, 0));
  report::TextTable table(
      {"on-chip MB", "on-chip GB/s", "time", "TOP/s", "of peak", "weights on-chip MB"});
  for (const auto& p : r.points)
    table.add_row(
        {format_number(p.onchip_mb, 0), format_number(p.onchip_gbs, 0),
         format_seconds(p.projection.time_s),
         format_number(p.projection.achieved_ops_per_s / 1e12, 2),
         report::format_percent(p.projection.achieved_ops_per_s / p.accelerator.peak_ops_per_s),
         format_number(p.projection.onchip_weight_bytes / 1e6, 1)});
  table.print(out);
  if (!with_layers) return;
  for (const auto& p : r.points) {
    out << "\n" << fmt::format("{} MB at {} GB/s", p.onchip_mb, p.onchip_gbs) << ":\n";
    report::TextTable lt({"layer", "weights", "activations", "time", "bound"});
    for (const auto& l : p.projection.layers)
      lt.add_row({l.layer, l.weights_onchip ? "on-chip" : "DRAM",
                  l.activations_onchip ? "on-chip" : "DRAM", format_seconds(l.time_s), l.bound});
    lt.print(out);
  }
}

}  // namespace plumb::jobs
