// Report section "Memory by category", from the stored memory passes (plumb memory): what
// the bytes at the step's peak are (TBD Fig. 8: weights, gradients, optimizer state, feature
// maps, workspace, input, other), how each category grows with the batch, and the fitted
// bytes per example.
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "plumb/analysis/memory_scaling.h"
#include "plumb/core/text.h"
#include "plumb/report/report.h"
#include "plumb/report/vega_lite.h"
#include "plumb/store/profile_records.h"

namespace plumb::report {
namespace {

using vl::json;
constexpr double kMiB = 1024.0 * 1024.0;

// The newest `plumb memory` call (group) per workload, mode and tag; its batches in order.
std::vector<std::vector<const store::StoredMemoryProfile*>> newest_groups(const ReportData& d) {
  std::map<std::tuple<std::string, std::string, std::string>, std::string> newest_group;
  for (const auto& m : d.memory) newest_group[{m.workload, m.mode, m.tag}] = m.group;
  std::vector<std::vector<const store::StoredMemoryProfile*>> out;
  for (const auto& [key, group] : newest_group) {
    std::map<int64_t, const store::StoredMemoryProfile*> by_batch;
    for (const auto& m : d.memory)
      if (m.group == group && m.workload == std::get<0>(key) && m.mode == std::get<1>(key))
        by_batch[m.batch] = &m;
    out.emplace_back();
    for (const auto& [batch, m] : by_batch) out.back().push_back(m);
  }
  return out;
}

Chart mix_chart(const std::vector<std::vector<const store::StoredMemoryProfile*>>& groups) {
  json values = json::array();
  for (const auto& g : groups)
    for (const auto* m : g) {
      if (m->result.status != run::RunStatus::kOk) continue;
      const auto& b = m->result.breakdown;
      for (size_t c = 0; c < profile::kMemoryCategoryCount; ++c)
        values.push_back({{"pass", fmt::format("{} b{}", record_label(*m), m->batch)},
                          {"category", profile::category_key(profile::category_at(c))},
                          {"order", c},
                          {"mib", static_cast<double>(b.at_total_peak[c]) / kMiB},
                          {"share", b.total_peak > 0 ? static_cast<double>(b.at_total_peak[c]) /
                                                           static_cast<double>(b.total_peak)
                                                     : 0.0}});
    }
  json s = vl::spec(values, 560);
  s["height"] = {{"step", 16}};
  s["mark"] = {{"type", "bar"}, {"tooltip", true}};
  json color = vl::field("category", "nominal", "category");
  color["sort"] = json::array();
  for (size_t c = 0; c < profile::kMemoryCategoryCount; ++c)
    color["sort"].push_back(profile::category_key(profile::category_at(c)));
  s["encoding"] = {
      {"y", vl::field("pass", "nominal", "workload, mode, batch")},
      {"x", vl::field("mib", "quantitative", "MiB live at the step's peak")},
      {"color", color},
      {"order", {{"field", "order"}}},
      {"tooltip", json::array({vl::tip("pass", "pass"), vl::tip("category", "category"),
                               vl::tip("mib", "MiB", ".1f"), vl::tip("share", "share", ".1%")})}};
  return {"Memory at the peak, by what the bytes are",
          "Each bar is one training or inference step at one batch size, split into what was "
          "live at the moment of its peak: weights, weight gradients, optimizer state, feature "
          "maps saved for backward, transient workspace, the input batch, and anything else "
          "(TBD Fig. 8). Feature maps grow with the batch; weights do not.",
          s};
}

std::optional<Chart> growth_chart(
    const std::vector<std::vector<const store::StoredMemoryProfile*>>& groups) {
  json values = json::array();
  for (const auto& g : groups) {
    if (g.size() < 2) continue;
    for (const auto* m : g) {
      if (m->result.status != run::RunStatus::kOk) continue;
      const auto& b = m->result.breakdown;
      for (size_t c = 0; c < profile::kMemoryCategoryCount; ++c)
        values.push_back({{"workload", record_label(*m)},
                          {"category", profile::category_key(profile::category_at(c))},
                          {"batch", m->batch},
                          {"mib", static_cast<double>(b.peak[c]) / kMiB}});
      values.push_back({{"workload", record_label(*m)},
                        {"category", "total peak"},
                        {"batch", m->batch},
                        {"mib", static_cast<double>(b.total_peak) / kMiB}});
    }
  }
  if (values.empty()) return std::nullopt;
  json s = vl::faceted(
      values, "workload",
      {{"width", 260},
       {"height", 180},
       {"mark", {{"type", "line"}, {"point", true}, {"tooltip", true}}},
       {"encoding",
        {{"x", vl::field("batch", "quantitative", "batch size")},
         {"y", vl::field("mib", "quantitative", "MiB (each category's own peak)")},
         {"color", vl::field("category", "nominal", "category")},
         {"tooltip", json::array({vl::tip("category", "category"), vl::tip("batch", "batch"),
                                  vl::tip("mib", "MiB", ".1f")})}}}});
  s["resolve"] = {{"scale", {{"y", "independent"}}}};
  return Chart{"Memory vs batch size",
               "Each category's peak as the batch grows, one panel per workload measured at "
               "several batches. A straight rising line is memory per example (the slope in the "
               "table below); a flat one is fixed by the model.",
               s};
}

std::optional<Table> slope_table(
    const std::vector<std::vector<const store::StoredMemoryProfile*>>& groups) {
  Table t;
  t.title = "Bytes per example (least-squares fit over the batches measured)";
  t.columns = {"workload", "batches"};
  for (size_t c = 0; c < profile::kMemoryCategoryCount; ++c)
    t.columns.push_back(std::string(profile::category_key(profile::category_at(c))) + " MiB/ex");
  t.columns.insert(t.columns.end(), {"total MiB/ex", "total at batch 0 (MiB)", "R² total"});
  for (const auto& g : groups) {
    std::vector<analysis::MemoryPoint> points;
    std::string batches;
    for (const auto* m : g) {
      if (m->result.status != run::RunStatus::kOk) continue;
      points.push_back({m->batch, m->result.breakdown.peak, m->result.breakdown.total_peak});
      batches += (batches.empty() ? "" : ",") + std::to_string(m->batch);
    }
    if (points.size() < 2 || points.front().batch == points.back().batch) continue;
    const auto fit = analysis::fit_memory_scaling(points);
    std::vector<Cell> row{{record_label(*g.front())}, {batches}};
    for (const auto& f : fit.category)
      row.push_back(number_cell(f.slope / kMiB, vl::number_text(f.slope / kMiB, 3)));
    row.push_back(number_cell(fit.total.slope / kMiB, vl::number_text(fit.total.slope / kMiB, 3)));
    row.push_back(
        number_cell(fit.total.intercept / kMiB, vl::number_text(fit.total.intercept / kMiB, 4)));
    row.push_back(number_cell(fit.total.r_squared, vl::number_text(fit.total.r_squared, 3)));
    t.rows.push_back(std::move(row));
  }
  if (t.rows.empty()) return std::nullopt;
  return t;
}

Table layer_table(const std::vector<std::vector<const store::StoredMemoryProfile*>>& groups) {
  Table t;
  t.title = "Layers holding the most feature-map bytes (largest batch measured)";
  t.columns = {"workload", "batch", "layer", "feature-map MiB"};
  for (const auto& g : groups) {
    const auto* m = g.back();
    if (m->result.status != run::RunStatus::kOk) continue;
    const auto& layers = m->result.breakdown.feature_map_layers;
    for (size_t i = 0; i < layers.size() && i < 5; ++i)
      t.rows.push_back(
          {{record_label(*m)},
           number_cell(m->batch, std::to_string(m->batch)),
           {layers[i].layer.empty() ? "(outside any named layer)" : layers[i].layer},
           number_cell(static_cast<double>(layers[i].bytes) / kMiB,
                       vl::number_text(static_cast<double>(layers[i].bytes) / kMiB, 4))});
  }
  return t;
}

}  // namespace

std::optional<Section> memory_section(const ReportData& d) {
  if (d.memory.empty()) return std::nullopt;
  const auto groups = newest_groups(d);
  Section s{"memory",
            "Memory by category",
            "From memory passes (plumb memory): every allocation of one recorded step, "
            "classified by what the bytes are. The newest pass per workload and mode.",
            {}};
  s.blocks.push_back(mix_chart(groups));
  if (auto c = growth_chart(groups)) s.blocks.push_back(*c);
  if (auto t = slope_table(groups)) s.blocks.push_back(*t);
  s.blocks.push_back(layer_table(groups));
  std::vector<std::string> failed;
  for (const auto& m : d.memory)
    if (m.result.status != run::RunStatus::kOk)
      failed.push_back(fmt::format("{} batch {}: {}", record_label(m), m.batch,
                                   run::status_name(m.result.status)));
  if (!failed.empty())
    s.blocks.push_back(Paragraph{"Passes that did not finish (not drawn): " + join(failed, "; ")});
  return s;
}

}  // namespace plumb::report
