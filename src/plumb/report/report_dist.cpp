// Report section "Data-parallel scaling", from the worlds `plumb dist` stored: throughput over
// the number of workers against linear scaling, per workload and link (TBD Fig. 11-12), the
// step split into compute and communication the step waited for, and a table with the
// efficiencies and their intervals.
#include <cmath>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "plumb/report/report.h"
#include "plumb/report/vega_lite.h"
#include "plumb/store/dist_record.h"

namespace plumb::report {
namespace {

using vl::json;

// "resnet50 b4/worker, link 1gbit" (+ " [tag]"): one line of the scaling chart.
std::string series_label(const store::StoredDistWorld& w) {
  return fmt::format("{} b{}/worker, link {}{}{}", w.workload, w.batch_per_worker, w.link,
                     w.overlap ? "" : ", no overlap", tag_suffix(w.tag));
}

// The newest world per (series, workers), ok ones only.
std::vector<store::StoredDistWorld> headline_worlds(const ReportData& d) {
  std::vector<store::StoredDistWorld> ok;
  for (const auto& w : d.dist)
    if (w.status == run::RunStatus::kOk && std::isfinite(w.throughput)) ok.push_back(w);
  if (ok.empty()) return ok;
  return newest_per_key(ok, [](const store::StoredDistWorld& w) {
    return std::make_tuple(series_label(w), w.threads_per_worker, w.workers);
  });
}

Chart scaling_chart(const std::vector<store::StoredDistWorld>& worlds) {
  json values = json::array();
  std::map<std::string, double> one_worker;  // series -> throughput of one worker
  for (const auto& w : worlds)
    if (w.workers == 1) one_worker[series_label(w)] = w.throughput;
  for (const auto& w : worlds) {
    const auto base = one_worker.find(series_label(w));
    values.push_back(
        {{"series", series_label(w)},
         {"workers", w.workers},
         {"throughput", w.throughput},
         {"linear", base != one_worker.end() ? json(base->second * w.workers) : json()},
         {"efficiency", std::isfinite(w.efficiency) ? json(w.efficiency) : json()},
         {"unit", w.throughput_unit}});
  }
  json s = vl::spec(values, 520, 300);
  const json x = vl::field("workers", "quantitative", "workers");
  json measured = {
      {"mark", {{"type", "line"}, {"point", true}, {"tooltip", true}}},
      {"encoding",
       {{"x", x},
        {"y", vl::field("throughput", "quantitative", "throughput (the workload's unit/s)")},
        {"color", vl::field("series", "nominal", "workload, batch per worker, link")},
        {"tooltip",
         json::array({vl::tip("series", "series"), vl::tip("workers", "workers"),
                      vl::tip("throughput", "throughput", ".3g"), vl::tip("unit", "unit"),
                      vl::tip("efficiency", "efficiency", ".1%")})}}}};
  json linear = {{"mark", {{"type", "line"}, {"strokeDash", json::array({4, 4})}}},
                 {"encoding",
                  {{"x", x},
                   {"y", {{"field", "linear"}, {"type", "quantitative"}}},
                   {"color", {{"field", "series"}, {"type", "nominal"}}}}}};
  s["layer"] = json::array({linear, measured});
  return {"Data-parallel throughput over workers",
          "Solid: measured throughput of all workers together; dashed: linear scaling of the "
          "one-worker throughput of the same series. The gap is what data parallelism loses to "
          "communication and to sharing the machine; a slower link widens it (TBD Observation "
          "12).",
          s};
}

Chart split_chart(const std::vector<store::StoredDistWorld>& worlds) {
  json values = json::array();
  for (const auto& w : worlds) {
    const std::string world = fmt::format("{}, {} workers", series_label(w), w.workers);
    values.push_back({{"world", world},
                      {"part", "compute"},
                      {"order", 0},
                      {"ms", w.compute_s * 1e3},
                      {"overlapped_ms", w.overlapped_s * 1e3}});
    values.push_back({{"world", world},
                      {"part", "communication waited for"},
                      {"order", 1},
                      {"ms", w.exposed_s * 1e3},
                      {"overlapped_ms", w.overlapped_s * 1e3}});
  }
  json s = vl::spec(values, 520);
  s["height"] = {{"step", 18}};
  s["mark"] = {{"type", "bar"}, {"tooltip", true}};
  json color = vl::field("part", "nominal", "part of the step");
  color["sort"] = json::array({"compute", "communication waited for"});
  s["encoding"] = {
      {"y", vl::field("world", "nominal", "")},
      {"x", vl::field("ms", "quantitative", "ms per step (the slowest worker)")},
      {"color", color},
      {"order", {{"field", "order"}, {"type", "quantitative"}}},
      {"tooltip",
       json::array({vl::tip("world", "world"), vl::tip("part", "part"), vl::tip("ms", "ms", ".1f"),
                    vl::tip("overlapped_ms", "all-reduce hidden under backward, ms", ".1f")})}};
  return {"Where a data-parallel step goes",
          "Each bar is one step of the slowest worker: compute (forward, backward, optimizer, "
          "and the all-reduces hidden under backward, in the tooltip) and the communication the "
          "step waited for after backward ended.",
          s};
}

}  // namespace

std::optional<Section> dist_section(const ReportData& d) {
  if (d.dist.empty()) return std::nullopt;
  Section s{"dist",
            "Data-parallel scaling",
            "From plumb dist: workers training the same model on their own batches, gradients "
            "averaged by bucketed all-reduce overlapped with backward (c10d Gloo). The newest "
            "world per workload, batch, link and worker count.",
            {}};
  const auto worlds = headline_worlds(d);
  if (!worlds.empty()) {
    s.blocks.push_back(scaling_chart(worlds));
    s.blocks.push_back(split_chart(worlds));
  }
  Table t{"Every stored world",
          {"workload", "link", "workers", "batch/worker", "status", "throughput", "efficiency",
           "step", "waited for comm.", "gradient bytes", "memory/worker"},
          {},
          "Efficiency = throughput / (workers x the one-worker throughput of the same series); "
          "failed worlds are listed with their message."};
  for (const auto& w : d.dist) {
    const bool ok = w.status == run::RunStatus::kOk;
    t.rows.push_back(
        {w.workload, w.link, number_cell(w.workers, std::to_string(w.workers)),
         number_cell(static_cast<double>(w.batch_per_worker), std::to_string(w.batch_per_worker)),
         ok ? std::string("ok") : std::string(run::status_name(w.status)) + ": " + w.message,
         ok ? number_cell(w.throughput, vl::number_text(w.throughput) + " " + w.throughput_unit)
            : Cell{"-"},
         std::isfinite(w.efficiency)
             ? number_cell(w.efficiency, fmt::format("{:.1f}%", w.efficiency * 100))
             : Cell{"-"},
         ok ? number_cell(w.step_mean_s, fmt::format("{:.1f} ms", w.step_mean_s * 1e3)) : Cell{"-"},
         ok ? number_cell(w.exposed_s, fmt::format("{:.1f} ms ({:.1f}%)", w.exposed_s * 1e3,
                                                   100 * w.exposed_s / w.step_mean_s))
            : Cell{"-"},
         number_cell(static_cast<double>(w.gradient_bytes),
                     vl::number_text(static_cast<double>(w.gradient_bytes) / 1e6) + " MB"),
         number_cell(static_cast<double>(w.peak_rss_bytes),
                     vl::number_text(static_cast<double>(w.peak_rss_bytes) / 1e6) + " MB")});
  }
  s.blocks.push_back(std::move(t));
  return s;
}

}  // namespace plumb::report
