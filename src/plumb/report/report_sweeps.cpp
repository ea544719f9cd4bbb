// Report sections for sweeps (plumb sweep), one per sweep: a metric against the batch when the
// batch is what varies (TBD Figs. 4-6), ParaDnn's heat maps over two hyperparameters with the
// others fixed (Figs. 2, 7), the regression sensitivity of examples/s to each hyperparameter,
// box plots of FLOP utilisation per model type, and, given a second database holding the same
// sweep, the speedup of that one over this one per point (Figs. 8-11).
#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "plumb/analysis/stored_sweep_points.h"
#include "plumb/analysis/sweep_analysis.h"
#include "plumb/analysis/sweep_inputs.h"
#include "plumb/core/errors.h"
#include "plumb/core/text.h"
#include "plumb/report/report.h"
#include "plumb/report/vega_lite.h"
#include "plumb/store/sweep_records.h"

namespace plumb::report {
namespace {

using vl::json;

struct MetricInfo {
  const char* key;
  const char* title;
};
constexpr MetricInfo kMetrics[] = {{"examples_per_s", "examples/s"},
                                   {"flops_util", "FLOP utilisation (of the fp32 peak)"}};

bool has_metric(const std::vector<analysis::SweepPoint>& points, const std::string& metric) {
  return std::any_of(points.begin(), points.end(), [&](const analysis::SweepPoint& p) {
    return analysis::sweep::finite_metric(p, metric).has_value();
  });
}

std::vector<analysis::SweepPoint> points_of(const ReportData& d, const store::StoredSweep& s) {
  std::vector<analysis::SweepPoint> out;
  for (const auto& p : d.sweep_points.at(s.id))
    if (p.status == "ok") out.push_back(analysis::analysis_point(s, p));
  return out;
}

std::vector<analysis::SweepPoint> in_group(const std::vector<analysis::SweepPoint>& points,
                                           const std::string& group) {
  std::vector<analysis::SweepPoint> out;
  for (const auto& p : points)
    if (p.group == group) out.push_back(p);
  return out;
}

Chart line_chart(const std::vector<analysis::SweepPoint>& points, const std::string& key,
                 const MetricInfo& metric) {
  json values = json::array();
  for (const auto& p : points)
    if (auto v = analysis::sweep::finite_metric(p, metric.key); v && p.params.count(key))
      values.push_back({{"group", p.group}, {"x", p.params.at(key)}, {"y", *v}});
  json s = vl::spec(values, 520, 260);
  s["mark"] = {{"type", "line"}, {"point", true}, {"tooltip", true}};
  s["encoding"] = {{"x", vl::log_field("x", key + " (log scale)")},
                   {"y", vl::field("y", "quantitative", metric.title)},
                   {"color", vl::field("group", "nominal", "model")}};
  return {fmt::format("{} vs {}", metric.title, key),
          fmt::format("The metric at each {} of the sweep (the median steady-state step of each "
                      "point). Where the line flattens, a larger {} stops paying off (TBD Figs. "
                      "4-6).",
                      key, key),
          s};
}

// Heat map axes: the batch on x when it varies, the parameter with most values on y, every
// other varying parameter fixed at its largest value (stated in the title).
std::optional<Chart> heat_map_chart(const std::vector<analysis::SweepPoint>& points,
                                    const MetricInfo& metric) {
  const auto varying = analysis::sweep::varying_params(points);
  if (varying.size() < 2) return std::nullopt;
  std::vector<std::string> keys(varying.begin(), varying.end());
  std::string x = varying.count("batch") ? "batch" : keys.front();
  std::string y;
  size_t most = 0;
  for (const auto& k : keys)
    if (k != x && analysis::sweep::values_of(points, k).size() > most) {
      most = analysis::sweep::values_of(points, k).size();
      y = k;
    }
  std::map<std::string, double> fixed;
  for (const auto& k : keys)
    if (k != x && k != y) fixed[k] = *analysis::sweep::values_of(points, k).rbegin();
  analysis::HeatMap h;
  try {
    h = analysis::heat_map(points, x, y, metric.key, fixed);
  } catch (const UsageError&) {
    return std::nullopt;  // e.g. a parameter present in some points only
  }
  json values = json::array();
  for (size_t r = 0; r < h.ys.size(); ++r)
    for (size_t c = 0; c < h.xs.size(); ++c)
      values.push_back({{"x", h.xs[c]},
                        {"y", h.ys[r]},
                        {"value", std::isfinite(h.values[r][c]) ? json(h.values[r][c]) : json()},
                        {"label", vl::number_text(h.values[r][c], 3)}});
  std::vector<std::string> fixed_text;
  for (const auto& [k, v] : fixed) fixed_text.push_back(k + "=" + vl::number_text(v, 6));
  json s = vl::spec(values, 0, 0);
  s["width"] = {{"step", 60}};
  s["height"] = {{"step", 26}};
  json color = vl::field("value", "quantitative", metric.title);
  color["scale"] = {{"scheme", "viridis"}};
  json rect = {{"mark", {{"type", "rect"}, {"tooltip", true}}}, {"encoding", {{"color", color}}}};
  json text = {{"mark", {{"type", "text"}, {"fontSize", 9}}},
               {"encoding", {{"text", {{"field", "label"}}}, {"color", {{"value", "white"}}}}}};
  s["encoding"] = {{"x", vl::field("x", "ordinal", x)}, {"y", vl::field("y", "ordinal", y)}};
  s["encoding"]["y"]["sort"] = "descending";
  s["layer"] = json::array({rect, text});
  return Chart{fmt::format("{}: {} over {} and {}{}", h.group, metric.title, x, y,
                           fixed_text.empty() ? "" : " (" + join(fixed_text, ", ") + ")"),
               "Each cell is one point of the sweep (the mean where it was measured more than "
               "once); empty cells failed (out of memory, diverged, timed out). Read along a row "
               "for the effect of the x parameter, along a column for the y parameter (ParaDnn "
               "Figs. 2, 7).",
               s};
}

std::optional<Chart> sensitivity_chart(const std::vector<analysis::SweepPoint>& points,
                                       const std::string& metric) {
  const auto varying = analysis::sweep::varying_params(points);
  if (varying.size() < 2 || points.size() < varying.size() + 2) return std::nullopt;
  analysis::Sensitivity sens;
  try {
    sens = analysis::sensitivity(points, {varying.begin(), varying.end()}, metric, true);
  } catch (const UsageError&) {
    return std::nullopt;
  }
  json values = json::array();
  for (const auto& w : sens.weights)
    if (std::isfinite(w.weight))
      values.push_back({{"key", w.key},
                        {"weight", w.weight},
                        {"sign", w.weight >= 0 ? "raises it" : "lowers it"}});
  if (values.empty()) return std::nullopt;
  json s = vl::spec(values, 420);
  s["height"] = {{"step", 22}};
  s["mark"] = {{"type", "bar"}, {"tooltip", true}};
  json y = vl::field("key", "nominal", "hyperparameter (log2, standardized)");
  y["sort"] = json::object({{"field", "weight"}, {"op", "min"}, {"order", "descending"}});
  s["encoding"] = {
      {"y", y},
      {"x", vl::field("weight", "quantitative", metric + " per standard deviation of the input")},
      {"color", vl::field("sign", "nominal", "")}};
  return Chart{fmt::format("Sensitivity of {} (linear regression, R² {})", metric,
                           vl::number_text(sens.r_squared, 3)),
               "How much the metric changes when a hyperparameter moves by one standard "
               "deviation of its (log2) values with the others held: the sign says which way, the "
               "length how strongly (ParaDnn Sec. 2.3). R² says how much of the variation a "
               "linear model explains; a low R² means interactions dominate.",
               s};
}

std::optional<Chart> box_chart(const std::vector<analysis::SweepPoint>& points,
                               const MetricInfo& metric) {
  std::vector<analysis::BoxStats> boxes;
  try {
    boxes = analysis::box_plots(points, metric.key);
  } catch (const UsageError&) {
    return std::nullopt;
  }
  json values = json::array();
  json outliers = json::array();
  for (const auto& b : boxes) {
    if (b.n == 0) continue;
    values.push_back({{"group", b.group},
                      {"p2", b.p2},
                      {"p9", b.p9},
                      {"p50", b.p50},
                      {"p91", b.p91},
                      {"p98", b.p98},
                      {"n", b.n}});
    for (double o : b.outliers) outliers.push_back({{"group", b.group}, {"value", o}});
  }
  if (values.empty()) return std::nullopt;
  json s = vl::spec(json::array(), 480);
  s.erase("data");
  s["height"] = {{"step", 30}};
  const json y = vl::field("group", "nominal", "model type");
  json whisker = {{"data", {{"values", values}}},
                  {"mark", "rule"},
                  {"encoding",
                   {{"y", y},
                    {"x", vl::field("p2", "quantitative", metric.title)},
                    {"x2", {{"field", "p98"}}}}}};
  json box = {
      {"data", {{"values", values}}},
      {"mark", {{"type", "bar"}, {"size", 16}, {"tooltip", true}}},
      {"encoding",
       {{"y", y}, {"x", {{"field", "p9"}, {"type", "quantitative"}}}, {"x2", {{"field", "p91"}}}}}};
  json median = {{"data", {{"values", values}}},
                 {"mark", {{"type", "tick"}, {"color", "white"}, {"size", 16}}},
                 {"encoding", {{"y", y}, {"x", {{"field", "p50"}, {"type", "quantitative"}}}}}};
  json dots = {{"data", {{"values", outliers}}},
               {"mark", {{"type", "point"}, {"size", 14}}},
               {"encoding", {{"y", y}, {"x", {{"field", "value"}, {"type", "quantitative"}}}}}};
  s["layer"] = json::array({whisker, box, median, dots});
  return Chart{fmt::format("Distribution of {} per model type", metric.title),
               "ParaDnn's box plots: the box spans the 9th to 91st percentile of the sweep's "
               "points, the white tick is the median, the whiskers reach the 2nd and 98th "
               "percentiles and dots are the points beyond them.",
               s};
}

std::optional<Chart> speedup_chart(const std::vector<analysis::SweepPoint>& a,
                                   const std::vector<analysis::SweepPoint>& b,
                                   const std::string& other_path) {
  analysis::Speedup sp;
  try {
    sp = analysis::speedup(a, b, "examples_per_s");
  } catch (const UsageError&) {
    return std::nullopt;
  }
  json values = json::array();
  for (const auto& p : sp.points) {
    if (!std::isfinite(p.ratio)) continue;
    std::vector<std::string> params;
    for (const auto& [k, v] : p.params) params.push_back(k + "=" + vl::number_text(v, 6));
    values.push_back(
        {{"group", p.group}, {"a", p.a}, {"ratio", p.ratio}, {"point", join(params, " ")}});
  }
  if (values.empty()) return std::nullopt;
  json s = vl::spec(json::array(), 560, 300);
  s.erase("data");
  json dots = {{"data", {{"values", values}}},
               {"mark", {{"type", "point"}, {"filled", true}, {"tooltip", true}}},
               {"encoding",
                {{"x", vl::log_field("a", "examples/s in this database (log scale)")},
                 {"y", vl::log_field("ratio", "speedup of the other database (log scale)")},
                 {"color", vl::field("group", "nominal", "model")},
                 {"tooltip", json::array({vl::tip("point", "point"), vl::tip("a", "A", ".4g"),
                                          vl::tip("ratio", "B / A", ".3f")})}}}};
  json one = {{"data", {{"values", json::array({{{"y", 1.0}}})}}},
              {"mark", {{"type", "rule"}, {"strokeDash", {4, 4}}}},
              {"encoding", {{"y", {{"field", "y"}, {"type", "quantitative"}}}}}};
  s["layer"] = json::array({one, dots});
  return Chart{fmt::format("Speedup of {} over this database (geometric mean {})", other_path,
                           vl::number_text(sp.geomean, 3)),
               "Each dot is one sweep point measured in both databases: above the dashed line "
               "the other one is faster. How the speedup spreads against the baseline's own "
               "throughput shows which models gain (ParaDnn Figs. 8-11).",
               s};
}

}  // namespace

std::vector<Section> sweep_sections(const ReportData& d, const ReportData* other) {
  std::vector<Section> out;
  for (const auto& sweep : d.sweeps) {
    const auto points = points_of(d, sweep);
    size_t failed = d.sweep_points.at(sweep.id).size() - points.size();
    Section s{"sweep-" + std::to_string(sweep.id),
              "Sweep " + sweep.name,
              fmt::format("{} of {} points finished ({} did not: out of memory, diverged, timed "
                          "out or failed). Spec: {}",
                          points.size(), sweep.points, failed, sweep.spec),
              {}};
    if (points.empty()) {
      out.push_back(std::move(s));
      continue;
    }
    for (const auto& group : analysis::sweep::groups_in_order(points)) {
      const auto g = in_group(points, group);
      const auto varying = analysis::sweep::varying_params(g);
      for (const auto& metric : kMetrics) {
        if (!has_metric(g, metric.key)) continue;
        if (varying.size() == 1) {
          s.blocks.push_back(line_chart(g, *varying.begin(), metric));
        } else if (auto c = heat_map_chart(g, metric)) {
          s.blocks.push_back(*c);
        }
      }
      if (auto c = sensitivity_chart(g, "examples_per_s")) s.blocks.push_back(*c);
    }
    for (const auto& metric : kMetrics)
      if (has_metric(points, metric.key) && points.size() >= 5)
        if (auto c = box_chart(points, metric)) s.blocks.push_back(*c);
    if (other != nullptr)
      for (const auto& sweep_b : other->sweeps)
        if (sweep_b.spec == sweep.spec)
          if (auto c = speedup_chart(points, points_of(*other, sweep_b), other->db_path))
            s.blocks.push_back(*c);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace plumb::report
