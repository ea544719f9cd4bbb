// Report section "Comparison": plumb compare's result (analysis/comparison_inputs.h) for a
// second database (--compare) or two tagged groups of this one (--tag-a/--tag-b): environment
// differences first, then the throughput ratio of each matched setting with its
// interval (within and between runs) and verdict, and the per-category time deltas that explain it.
#include <cmath>

#include <fmt/format.h>

#include "plumb/analysis/comparison_inputs.h"
#include "plumb/core/errors.h"
#include "plumb/report/report.h"
#include "plumb/report/vega_lite.h"

namespace plumb::report {
namespace {

using vl::json;

Table environment_table(const analysis::Comparison& c) {
  Table t;
  t.title = "Environment: A vs B (differences first)";
  t.columns = {"field", "A", "B", "differs"};
  for (bool differs : {true, false})
    for (const auto& f : c.environment)
      if (f.differs == differs) t.rows.push_back({{f.field}, {f.a}, {f.b}, {differs ? "YES" : ""}});
  t.note =
      "A difference here (another CPU, library, thread count or a loaded machine) can "
      "explain a throughput difference below by itself.";
  return t;
}

Chart ratio_chart(const analysis::Comparison& c) {
  json values = json::array();
  for (const auto& r : c.rows) {
    const auto& t = r.throughput;
    if (t.verdict == analysis::Verdict::kNotComparable) continue;
    values.push_back({{"setting", fmt::format("{} {} {}", r.workload, r.mode, r.setting)},
                      {"ratio", t.ratio},
                      {"lo", t.ci_low},
                      {"hi", t.ci_high},
                      {"verdict", analysis::verdict_name(t.verdict)},
                      {"reason", t.reason}});
  }
  const double tol = c.statistics.tolerance;
  json s = vl::spec(json::array(), 520);
  s.erase("data");
  s["height"] = {{"step", 18}};
  const json y = vl::field("setting", "nominal", "workload, mode, setting");
  json band = {{"data", {{"values", json::array({{{"lo", 1 / (1 + tol)}, {"hi", 1 + tol}}})}}},
               {"mark", {{"type", "rect"}, {"color", "#ddd"}, {"opacity", 0.6}}},
               {"encoding",
                {{"x", {{"field", "lo"}, {"type", "quantitative"}}}, {"x2", {{"field", "hi"}}}}}};
  json err = {
      {"data", {{"values", values}}},
      {"mark", "rule"},
      {"encoding",
       {{"y", y}, {"x", {{"field", "lo"}, {"type", "quantitative"}}}, {"x2", {{"field", "hi"}}}}}};
  json ratio_axis = vl::log_field("ratio", "throughput B / A (log scale), 95% interval");
  ratio_axis["scale"]["nice"] = false;  // a nice log domain would stretch to 0.1 .. 10
  ratio_axis["scale"]["padding"] = 12;
  json dot = {{"data", {{"values", values}}},
              {"mark", {{"type", "point"}, {"filled", true}, {"size", 60}, {"tooltip", true}}},
              {"encoding",
               {{"y", y},
                {"x", ratio_axis},
                {"color", vl::field("verdict", "nominal", "verdict")},
                {"tooltip",
                 json::array({vl::tip("setting", "setting"), vl::tip("ratio", "B / A", ".4f"),
                              vl::tip("lo", "interval low", ".4f"),
                              vl::tip("hi", "interval high", ".4f"), vl::tip("reason", "why")})}}}};
  s["layer"] = json::array({band, err, dot});
  return {"Throughput of B relative to A",
          fmt::format("Each dot is B's throughput over A's for one matched setting, with its "
                      "interval: the noise within runs (block bootstrap of every stored step "
                      "time) and, where replicate runs exist, between runs. The grey band is "
                      "the practical-equivalence tolerance (±{:.0f}%): a difference is called "
                      "only when the whole interval lies outside it.",
                      tol * 100),
          s};
}

std::optional<Chart> category_chart(const analysis::Comparison& c) {
  json values = json::array();
  for (const auto& r : c.rows)
    for (const auto& d : r.categories)
      values.push_back({{"setting", fmt::format("{} {}", r.workload, r.mode)},
                        {"category", d.category},
                        {"delta_ms", d.delta_s * 1e3},
                        {"a_ms", d.a_s * 1e3},
                        {"b_ms", d.b_s * 1e3}});
  if (values.empty()) return std::nullopt;
  json s = vl::spec(values, 520);
  s["height"] = {{"step", 14}};
  s["mark"] = {{"type", "bar"}, {"tooltip", true}};
  s["encoding"] = {
      {"y", vl::field("setting", "nominal", "workload, mode")},
      {"yOffset", vl::field("category", "nominal", "")},
      {"x", vl::field("delta_ms", "quantitative", "B minus A, ms per step")},
      {"color", vl::field("category", "nominal", "category")},
      {"tooltip",
       json::array({vl::tip("category", "category"), vl::tip("a_ms", "A (ms)", ".3g"),
                    vl::tip("b_ms", "B (ms)", ".3g"), vl::tip("delta_ms", "B - A (ms)", ".3g")})}};
  return Chart{"Where a difference comes from: time per operator category, B minus A",
               "For settings profiled on both sides: how much longer (right) or shorter (left) "
               "each operator category takes per profiled step in B than in A. The longest bars "
               "explain the throughput difference above.",
               s};
}

}  // namespace

std::optional<Section> comparison_section(const ReportRequest& request) {
  const bool tags = !request.tag_a.empty() || !request.tag_b.empty();
  if (request.compare_db.empty() && !tags) return std::nullopt;
  analysis::ComparisonRequest c;
  c.a.db = request.db;
  c.b.db = request.compare_db.empty() ? request.db : request.compare_db;
  if (!request.tag_a.empty()) c.a.filters["tag"] = request.tag_a;
  if (!request.tag_b.empty()) c.b.filters["tag"] = request.tag_b;
  Section s{"comparison", "Comparison", "", {}};
  analysis::Comparison result;
  try {
    result = analysis::compare_sources(c);
  } catch (const UsageError& e) {
    s.intro = std::string("No runs to compare: ") + e.what();
    return s;
  }
  s.intro = fmt::format(
      "A = {}, B = {}. {} faster, {} slower, {} without a significant "
      "difference, {} not comparable (same verdict rules as plumb compare).",
      result.label_a, result.label_b, result.count(analysis::Verdict::kFaster),
      result.count(analysis::Verdict::kSlower),
      result.count(analysis::Verdict::kNoSignificantDifference),
      result.count(analysis::Verdict::kNotComparable));
  s.blocks.push_back(environment_table(result));
  s.blocks.push_back(ratio_chart(result));
  Table rows;
  rows.title = "Matched settings";
  rows.columns = {"workload",
                  "mode",
                  "setting",
                  "A",
                  "B",
                  "unit",
                  "B / A",
                  "interval",
                  "verdict",
                  "why",
                  "detectable change (19 in 20)"};
  for (const auto& r : result.rows) {
    const auto& t = r.throughput;
    rows.rows.push_back(
        {{r.workload},
         {r.mode},
         {r.setting},
         number_cell(t.throughput_a, vl::number_text(t.throughput_a, 4)),
         number_cell(t.throughput_b, vl::number_text(t.throughput_b, 4)),
         {r.throughput_unit},
         number_cell(t.ratio, vl::number_text(t.ratio, 4)),
         {fmt::format("{} .. {}", vl::number_text(t.ci_low, 4), vl::number_text(t.ci_high, 4))},
         {analysis::verdict_name(t.verdict)},
         {t.reason},
         std::isnan(t.resolution.detectable_change)
             ? Cell{"unknown (one run per side)"}
             : number_cell(t.resolution.detectable_change,
                           fmt::format("{:.1f}%", 100 * t.resolution.detectable_change))});
  }
  s.blocks.push_back(rows);
  if (auto chart = category_chart(result)) s.blocks.push_back(*chart);
  for (const auto& note : result.notes) s.blocks.push_back(Paragraph{note});
  return s;
}

}  // namespace plumb::report
