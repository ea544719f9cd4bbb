// Report section "Precision": what each precision buys (throughput against fp32, with the
// interval) and what it costs (output error against fp32 on the same inputs and weights), per
// workload, from the comparisons `plumb precision` stored.
#include <cmath>
#include <tuple>

#include <fmt/format.h>

#include "plumb/core/ratio_interval.h"
#include "plumb/report/report.h"
#include "plumb/report/vega_lite.h"
#include "plumb/store/precision_records.h"

namespace plumb::report {
namespace {

using vl::json;

std::string dtype_label(const store::PrecisionComparisonRecord& p) {
  std::string label = dtype_name(p.dtype);
  if (p.memory_format != "contiguous") label += " " + p.memory_format;
  if (p.note.rfind("selective plan", 0) == 0) label += " (selective)";
  return label;
}

Chart speedup_chart(const std::vector<store::PrecisionComparisonRecord>& rows) {
  json values = json::array();
  for (const auto& p : rows) {
    if (!std::isfinite(p.speedup)) continue;
    values.push_back({{"setting", setting_label(p)},
                      {"dtype", dtype_label(p)},
                      {"speedup", p.speedup},
                      {"lo", std::isfinite(p.speedup_low) ? p.speedup_low : p.speedup},
                      {"hi", std::isfinite(p.speedup_high) ? p.speedup_high : p.speedup},
                      {"rel_l2", p.error_measured ? json(p.error.relative_l2) : json()}});
  }
  json s = vl::spec(values, 560);
  s["height"] = {{"step", 16}};
  s["encoding"] = {{"y", vl::field("setting", "nominal", "workload, mode, batch, threads")},
                   {"yOffset", vl::field("dtype", "nominal", "")},
                   {"color", vl::field("dtype", "nominal", "precision")}};
  json point = {
      {"mark", {{"type", "point"}, {"filled", true}, {"size", 60}, {"tooltip", true}}},
      {"encoding",
       {{"x", vl::log_field("speedup", "throughput / fp32's (log scale), 95% interval")},
        {"tooltip", json::array({vl::tip("setting", "setting"), vl::tip("dtype", "precision"),
                                 vl::tip("speedup", "x fp32", ".3f"),
                                 vl::tip("rel_l2", "relative L2 error", ".2e")})}}}};
  json interval = {
      {"mark", {{"type", "rule"}}},
      {"encoding", {{"x", vl::field("lo", "quantitative", "")}, {"x2", {{"field", "hi"}}}}}};
  json parity = {{"mark", {{"type", "rule"}, {"strokeDash", json::array({4, 4})}}},
                 {"encoding", {{"x", {{"datum", 1}}}}}};
  s["layer"] = json::array({point, interval, parity});
  return {"Speed of each precision against fp32",
          "One dot per workload setting and precision: its throughput divided by the fp32 run's "
          "of the same setting (right of the dashed line: faster), with the ratio's 95% "
          "bootstrap interval. Error is in the next chart and the table.",
          s};
}

std::optional<Chart> tradeoff_chart(const std::vector<store::PrecisionComparisonRecord>& rows) {
  json values = json::array();
  for (const auto& p : rows) {
    if (!p.error_measured || !std::isfinite(p.speedup) || !(p.error.relative_l2 > 0)) continue;
    values.push_back({{"setting", setting_label(p)},
                      {"dtype", dtype_label(p)},
                      {"speedup", p.speedup},
                      {"rel_l2", p.error.relative_l2}});
  }
  if (values.empty()) return std::nullopt;
  json s = vl::spec(values, 560, 300);
  s["mark"] = {{"type", "point"}, {"filled", true}, {"size", 70}, {"tooltip", true}};
  s["encoding"] = {
      {"x", vl::log_field("rel_l2", "relative L2 error of the output against fp32 (log scale)")},
      {"y", vl::log_field("speedup", "throughput / fp32's (log scale)")},
      {"color", vl::field("dtype", "nominal", "precision")},
      {"shape", vl::field("setting", "nominal", "setting")},
      {"tooltip", json::array({vl::tip("setting", "setting"), vl::tip("dtype", "precision"),
                               vl::tip("speedup", "x fp32", ".3f"),
                               vl::tip("rel_l2", "relative L2 error", ".2e")})}};
  return Chart{"What each precision buys and costs",
               "Up is faster, left is closer to fp32: the best trade sits top left. Error is "
               "measured on the same synthetic inputs and weights as fp32 (random weights, so "
               "it shows the arithmetic's error, not a trained model's accuracy).",
               s};
}

Table comparisons_table(const std::vector<store::PrecisionComparisonRecord>& rows) {
  Table t;
  t.title = "Precision against fp32";
  t.columns = {"workload", "mode",    "batch",  "threads",   "precision", "x fp32",   "95% int.",
               "rel L2",   "max abs", "cosine", "agreement", "run id",    "fp32 run", "note"};
  for (const auto& p : rows) {
    const auto num = [](double v, int digits) {
      return std::isfinite(v) ? number_cell(v, vl::number_text(v, digits)) : Cell{"-"};
    };
    const RatioInterval interval{p.speedup, p.speedup_low, p.speedup_high};
    t.rows.push_back(
        {{p.workload},
         {p.mode},
         number_cell(p.batch, std::to_string(p.batch)),
         number_cell(p.threads, std::to_string(p.threads)),
         {dtype_label(p)},
         num(p.speedup, 3),
         {interval.interval_known() ? fmt::format("{}..{}", vl::number_text(p.speedup_low, 3),
                                                  vl::number_text(p.speedup_high, 3))
                                    : interval_text(interval)},
         p.error_measured ? num(p.error.relative_l2, 3) : Cell{"-"},
         p.error_measured ? num(p.error.max_abs, 3) : Cell{"-"},
         p.error_measured ? num(p.error.cosine, 6) : Cell{"-"},
         p.error_measured && !p.error.agreement_kind.empty()
             ? number_cell(p.error.agreement, fmt::format("{} {:.1f}%", p.error.agreement_kind,
                                                          100 * p.error.agreement))
             : Cell{"-"},
         number_cell(p.run_id, std::to_string(p.run_id)),
         number_cell(p.reference_run_id, std::to_string(p.reference_run_id)),
         {p.note}});
  }
  t.note =
      "Newest comparison per setting and precision (plumb precision). An interval is unknown "
      "where a run had one step-time sample (a quick pass on a slow machine): the ratio is then "
      "the point estimate alone. Precisions that could not run are in the Runs table with "
      "status unsupported and the reason.";
  return t;
}

}  // namespace

std::optional<Section> precision_section(const ReportData& d) {
  if (d.precision.empty()) return std::nullopt;
  const auto rows = newest_per_key(d.precision, [](const store::PrecisionComparisonRecord& p) {
    return std::make_tuple(p.workload, p.mode, p.batch, p.threads, p.tag, dtype_label(p));
  });
  Section s{"precision",
            "Precision: speed against error",
            "Each precision measured like fp32 (steady state, same method) and compared with the "
            "fp32 run of the same setting: the speed it buys and the output error it costs "
            "(docs/precision.md says how bf16, fp16 and int8 are run).",
            {}};
  s.blocks.push_back(speedup_chart(rows));
  if (auto c = tradeoff_chart(rows)) s.blocks.push_back(*c);
  s.blocks.push_back(comparisons_table(rows));
  return s;
}

}  // namespace plumb::report
