// Report sections from the stored operator profiles (plumb profile). Across workloads:
// Fathom's category breakdown as a heat map (Fig. 3), the cumulative operator-time curves
// (Fig. 2), training vs inference (Fig. 5) and the similarity dendrograms. In detail: thread
// scaling per category (Fig. 6) and a roofline of each profile's operators and layers on the
// probed ceilings.
#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "plumb/analysis/breakdown.h"
#include "plumb/analysis/profile_roofline.h"
#include "plumb/analysis/workload_findings.h"
#include "plumb/report/report.h"
#include "plumb/report/vega_lite.h"
#include "plumb/store/profile_records.h"

namespace plumb::report {
namespace {

using vl::json;

// The newest profile per (workload, mode, tag) at its largest thread count.
std::vector<store::StoredProfile> headline_profiles(const ReportData& d) {
  std::vector<store::StoredProfile> ok;
  for (const auto& p : d.profiles)
    if (p.result.status == run::RunStatus::kOk) ok.push_back(p);
  if (ok.empty()) return ok;
  const auto newest = newest_per_key(ok, [](const store::StoredProfile& p) {
    return std::make_tuple(p.workload, p.mode, p.tag, p.threads);
  });
  std::map<std::tuple<std::string, std::string, std::string>, store::StoredProfile> best;
  for (const auto& p : newest) best[{p.workload, p.mode, p.tag}] = p;  // threads ascend per key
  std::vector<store::StoredProfile> out;
  for (auto& [key, p] : best) out.push_back(std::move(p));
  return out;
}

Chart category_heat_map(const std::vector<store::StoredProfile>& profiles) {
  json values = json::array();
  for (const auto& p : profiles) {
    const auto b = analysis::breakdown(p.result.profile, analysis::GroupBy::kCategory);
    for (const auto& row : b.rows)
      values.push_back({{"profile", record_label(p)},
                        {"category", row.name},
                        {"share", row.time_share},
                        {"ms", row.time_s * 1e3}});
    if (b.step_s > 0)
      values.push_back({{"profile", record_label(p)},
                        {"category", "(framework overhead)"},
                        {"share", b.overhead_s / b.step_s},
                        {"ms", b.overhead_s * 1e3}});
  }
  json s = vl::spec(values, 0, 0);
  s["width"] = {{"step", 44}};
  s["height"] = {{"step", 18}};
  s["mark"] = {{"type", "rect"}, {"tooltip", true}};
  json color = vl::field("share", "quantitative", "share of step time");
  color["scale"] = {{"scheme", "blues"}, {"domain", {0, 1}}};
  color["legend"] = {{"format", ".0%"}};
  s["encoding"] = {
      {"x", vl::field("category", "nominal", "operator category")},
      {"y", vl::field("profile", "nominal", "workload and mode")},
      {"color", color},
      {"tooltip",
       json::array({vl::tip("profile", "profile"), vl::tip("category", "category"),
                    vl::tip("share", "share", ".1%"), vl::tip("ms", "ms per step", ".3g")})}};
  s["config"]["axisX"] = {{"labelAngle", -45}};
  return {"Where the step time goes, by operator category",
          "Each row is one workload and mode; darker cells take a larger share of the profiled "
          "step (self time of the operators in that category; framework overhead is time outside "
          "any operator). Rows that look alike are workloads that stress the hardware alike.",
          s};
}

Chart cumulative_chart(const std::vector<store::StoredProfile>& profiles) {
  json values = json::array();
  for (const auto& p : profiles) {
    const auto c = analysis::cumulative_curve(p.result.profile);
    for (size_t i = 0; i < c.names.size(); ++i)
      values.push_back({{"profile", record_label(p)},
                        {"rank", i + 1},
                        {"op", c.names[i]},
                        {"cumulative", c.cumulative[i]}});
  }
  json s = vl::spec(values, 600, 300);
  s["mark"] = {{"type", "line"}, {"point", {{"size", 12}}}, {"tooltip", true}};
  json x = vl::log_field("rank", "operator types, most expensive first (log scale)");
  json y = vl::field("cumulative", "quantitative", "cumulative share of operator time");
  y["axis"] = {{"format", ".0%"}};
  s["encoding"] = {{"x", x},
                   {"y", y},
                   {"color", vl::field("profile", "nominal", "profile")},
                   {"tooltip", json::array({vl::tip("profile", "profile"),
                                            vl::tip("op", "operator"), vl::tip("rank", "rank"),
                                            vl::tip("cumulative", "cumulative", ".1%")})}};
  return {"How few operator types dominate (cumulative operator time)",
          "Operator types sorted by their time, each curve climbing to 100% of its profile's "
          "operator time. A curve that reaches 90% within a handful of types means a few kernels "
          "decide performance (Fathom Fig. 2).",
          s};
}

std::optional<Chart> train_vs_infer_chart(const std::vector<store::StoredProfile>& profiles) {
  std::map<std::pair<std::string, std::string>, std::map<std::string, const store::StoredProfile*>>
      by_workload;
  for (const auto& p : profiles) by_workload[{p.workload, p.tag}][p.mode] = &p;
  json values = json::array();
  for (const auto& [key, modes] : by_workload) {
    if (modes.count("train") == 0 || modes.count("infer") == 0) continue;
    const auto m = analysis::compare_modes(modes.at("train")->result.profile,
                                           modes.at("infer")->result.profile);
    const std::string label = key.first + tag_suffix(key.second);
    for (const auto& [category, shares] : m.category_share) {
      values.push_back({{"workload", label},
                        {"mode", "train"},
                        {"category", category},
                        {"share", shares.first},
                        {"ratio", m.step_ratio}});
      values.push_back({{"workload", label},
                        {"mode", "infer"},
                        {"category", category},
                        {"share", shares.second},
                        {"ratio", m.step_ratio}});
    }
  }
  if (values.empty()) return std::nullopt;
  json s = vl::spec(values, 520);
  s["height"] = {{"step", 12}};
  s["mark"] = {{"type", "bar"}, {"tooltip", true}};
  json x = vl::field("share", "quantitative", "share of operator time");
  x["stack"] = "normalize";
  x["axis"] = {{"format", ".0%"}};
  s["encoding"] = {
      {"y", vl::field("workload", "nominal", "workload")},
      {"yOffset", vl::field("mode", "nominal", "")},
      {"x", x},
      {"color", vl::field("category", "nominal", "category")},
      {"tooltip", json::array({vl::tip("workload", "workload"), vl::tip("mode", "mode"),
                               vl::tip("category", "category"), vl::tip("share", "share", ".1%"),
                               vl::tip("ratio", "train/infer step time", ".2f")})}};
  return Chart{"Training vs inference, by operator category",
               "For each workload profiled in both modes: the upper bar of a pair is training, "
               "the lower inference, each split by category. Training adds backward and optimizer "
               "work, which shifts the mix (Fathom Fig. 5); the tooltip gives the train/infer "
               "step-time ratio.",
               s};
}

std::optional<Chart> thread_scaling_chart(const ReportData& d) {
  std::map<std::tuple<std::string, std::string, std::string>,
           std::map<int, const store::StoredProfile*>>
      series;
  for (const auto& p : d.profiles)
    if (p.result.status == run::RunStatus::kOk)
      series[{p.workload, p.mode, p.tag}][p.threads] = &p;  // newest per thread count
  json values = json::array();
  for (const auto& [key, by_threads] : series) {
    if (by_threads.size() < 2) continue;
    std::vector<int> threads;
    std::vector<profile::StepProfile> steps;
    for (const auto& [t, p] : by_threads) {
      threads.push_back(t);
      steps.push_back(p->result.profile);
    }
    const std::string label =
        std::get<0>(key) + " " + std::get<1>(key) + tag_suffix(std::get<2>(key));
    for (const auto& fit : analysis::thread_scaling(threads, steps))
      for (size_t i = 0; i < fit.threads.size(); ++i)
        values.push_back({{"profile", label},
                          {"category", fit.name},
                          {"threads", fit.threads[i]},
                          {"speedup", fit.speedup[i]},
                          {"serial", fit.serial_fraction}});
  }
  if (values.empty()) return std::nullopt;
  json x = vl::field("threads", "quantitative", "threads");
  x["scale"] = {{"zero", false}};
  json s = vl::faceted(
      values, "profile",
      {{"width", 260},
       {"height", 180},
       {"mark", {{"type", "line"}, {"point", true}, {"tooltip", true}}},
       {"encoding",
        {{"x", x},
         {"y", vl::field("speedup", "quantitative", "speedup over the fewest threads")},
         {"color", vl::field("category", "nominal", "category")},
         {"tooltip", json::array({vl::tip("category", "category"), vl::tip("threads", "threads"),
                                  vl::tip("speedup", "speedup", ".2f"),
                                  vl::tip("serial", "Amdahl serial fraction", ".2f")})}}}});
  return Chart{"Thread scaling per operator category",
               "Speedup of each category's time as threads are added (one panel per workload "
               "profiled at several thread counts; the line 'step' is the whole step). Flat lines "
               "are serial work that limits scaling; the tooltip gives the Amdahl serial "
               "fraction fitted to each line (Fathom Fig. 6).",
               s};
}

std::optional<Chart> roofline_chart(const store::StoredProfile& p,
                                    const analysis::Ceilings& ceilings) {
  json points = json::array();
  double lo = 1e300, hi = 0;
  auto add = [&](const analysis::WorkItem& w, const char* kind) {
    if (w.flops <= 0 || w.bytes <= 0 || w.seconds <= 0) return;
    const double intensity = w.flops / w.bytes;
    lo = std::min(lo, intensity);
    hi = std::max(hi, intensity);
    points.push_back({{"name", w.name},
                      {"kind", kind},
                      {"intensity", intensity},
                      {"gflops", w.flops / w.seconds / 1e9},
                      {"ms", w.seconds * 1e3}});
  };
  auto top = [&](analysis::GroupBy by, const char* kind) {
    auto items = analysis::work_items(p.result.profile, by);
    std::sort(items.begin(), items.end(),
              [](const auto& a, const auto& b) { return a.seconds > b.seconds; });
    if (items.size() > 25) items.resize(25);
    for (const auto& w : items) add(w, kind);
  };
  top(analysis::GroupBy::kOp, "operator");
  top(analysis::GroupBy::kLayer, "layer");
  add(analysis::step_item(p.result.profile, "whole step"), "whole step");
  if (points.empty()) return std::nullopt;
  json roofs = json::array();
  const double x0 = lo / 4, x1 = hi * 4;
  for (const auto& m : ceilings.memory)
    for (int i = 0; i <= 40; ++i) {
      const double x = x0 * std::pow(x1 / x0, i / 40.0);
      roofs.push_back({{"roof", m.level + " (" + vl::number_text(m.bytes_per_s / 1e9) + " GB/s)"},
                       {"intensity", x},
                       {"gflops", std::min(ceilings.peak_flops, m.bytes_per_s * x) / 1e9}});
    }
  json s = vl::spec(json::array(), 600, 340);
  s.erase("data");
  json roof = {{"data", {{"values", roofs}}},
               {"mark", {{"type", "line"}, {"strokeDash", {5, 3}}, {"clip", true}}},
               {"encoding",
                {{"x", vl::log_field("intensity", "arithmetic intensity (FLOP/byte, log scale)")},
                 {"y", vl::log_field("gflops", "achieved GFLOP/s (log scale)")},
                 {"strokeDash", vl::field("roof", "nominal", "memory roof")},
                 {"color", {{"value", "#888"}}}}}};
  json dots = {{"data", {{"values", points}}},
               {"mark", {{"type", "point"}, {"filled", true}, {"tooltip", true}}},
               {"encoding",
                {{"x", {{"field", "intensity"}, {"type", "quantitative"}}},
                 {"y", {{"field", "gflops"}, {"type", "quantitative"}}},
                 {"shape", {{"field", "kind"}, {"type", "nominal"}, {"legend", nullptr}}},
                 {"color", vl::field("kind", "nominal", "item")},
                 {"size", vl::field("ms", "quantitative", "ms per step")},
                 {"tooltip", json::array({vl::tip("name", "name"), vl::tip("kind", "kind"),
                                          vl::tip("intensity", "FLOP/byte", ".3g"),
                                          vl::tip("gflops", "GFLOP/s", ".3g"),
                                          vl::tip("ms", "ms per step", ".3g")})}}}};
  s["layer"] = json::array({roof, dots});
  s["resolve"] = {{"scale", {{"color", "independent"}, {"strokeDash", "independent"}}}};
  return Chart{fmt::format("Roofline: {} ({} threads)", record_label(p), p.threads),
               fmt::format("The {} most expensive operators and layers (and the whole step) at "
                           "their FLOPs per byte moved and achieved GFLOP/s; dashed lines are the "
                           "roofs: {} fp32 peak {} GFLOP/s and each memory level's bandwidth. A "
                           "point far below every roof is bound by overhead, not by the hardware.",
                           25, ceilings.peak_source, vl::number_text(ceilings.peak_flops / 1e9, 4)),
               s};
}

}  // namespace

std::optional<Section> cross_workload_section(const ReportData& d) {
  const auto profiles = headline_profiles(d);
  if (profiles.empty()) return std::nullopt;
  Section s{"across",
            "Across workloads: where the time goes",
            "From operator profiles (plumb profile): a separate pass with the operator observer "
            "attached, so these shares carry its small overhead while the throughput figures "
            "never do. Each workload's newest profile at its largest thread count.",
            {}};
  s.blocks.push_back(category_heat_map(profiles));
  s.blocks.push_back(cumulative_chart(profiles));
  if (auto c = train_vs_infer_chart(profiles)) s.blocks.push_back(*c);
  for (auto& block : similarity_blocks(d)) s.blocks.push_back(std::move(block));
  return s;
}

std::optional<Section> time_section(const ReportData& d) {
  const auto profiles = headline_profiles(d);
  if (profiles.empty()) return std::nullopt;
  Section s{"time",
            "Operators on the roofline, and thread scaling",
            "Each workload's newest profile at its largest thread count, its operators and layers "
            "placed on the ceilings the newest probe of its machine measured.",
            {}};
  if (auto c = thread_scaling_chart(d)) s.blocks.push_back(*c);
  bool missing_probe = false;
  for (const auto& p : profiles) {
    const auto ceilings = analysis::profile_ceilings(p, d.probes);
    if (!ceilings) {
      missing_probe = true;
    } else if (auto c = roofline_chart(p, *ceilings)) {
      s.blocks.push_back(*c);
    }
  }
  if (missing_probe)
    s.blocks.push_back(
        Paragraph{"Rooflines need the ceilings of the machine a profile was "
                  "measured on: run plumb probe --quick there with the same --db."});
  return s;
}

}  // namespace plumb::report
