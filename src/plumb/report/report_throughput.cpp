// Report section "Throughput and latency": the newest run per workload, tag and setting, with
// its step time's 95% confidence interval, and inference latency percentiles.
// Failed runs are listed with their status, never drawn as a number.
#include <cmath>
#include <tuple>

#include <fmt/format.h>

#include "plumb/analysis/comparison_identity.h"
#include "plumb/core/execution_settings.h"
#include "plumb/report/decode_roof_chart.h"
#include "plumb/report/report.h"
#include "plumb/report/text_table.h"
#include "plumb/report/vega_lite.h"
#include "plumb/store/run_record.h"

namespace plumb::report {
namespace {

using vl::json;

std::string run_label(const store::StoredRun& r) {
  std::string precision = r.dtype == Dtype::kFp32 ? "" : std::string(" ") + dtype_name(r.dtype);
  if (r.memory_format != "contiguous") precision += " " + r.memory_format;
  // Runs that differ only in engine or heap are rows of their own: their labels differ too.
  const run::RunOptions defaults;
  if (r.engine != engine_name(defaults.engine)) precision += " " + r.engine;
  if (r.heap != heap_policy_name(defaults.heap)) precision += " heap " + r.heap;
  return fmt::format("{} b{} t{}{}{}", r.workload, r.batch, r.threads, precision,
                     tag_suffix(r.tag));
}

Chart step_time_chart(const std::vector<store::StoredRun>& runs) {
  json values = json::array();
  for (const auto& r : runs) {
    const auto& st = r.result.step_time;
    if (r.result.status != run::RunStatus::kOk || !std::isfinite(st.mean)) continue;
    const double ci = std::isfinite(st.ci_half_width) ? st.ci_half_width : 0.0;
    values.push_back({{"run", run_label(r)},
                      {"mode", r.mode},
                      {"mean_ms", st.mean * 1e3},
                      {"lo_ms", (st.mean - ci) * 1e3},
                      {"hi_ms", (st.mean + ci) * 1e3},
                      {"ci_pct", std::isfinite(st.ci_rel) ? st.ci_rel * 100 : 0.0},
                      {"n", st.n},
                      {"throughput", r.result.throughput},
                      {"unit", r.result.throughput_unit}});
  }
  json s = vl::spec(values, 560);
  s["height"] = {{"step", 14}};
  json y = vl::field("run", "nominal", "workload, batch, threads");
  y["sort"] = json::object({{"field", "mean_ms"}, {"order", "descending"}});
  json x = vl::log_field("mean_ms", "mean step time (ms, log scale), 95% CI");
  s["encoding"] = {{"y", y},
                   {"yOffset", vl::field("mode", "nominal", "")},
                   {"color", vl::field("mode", "nominal", "mode")}};
  // A point, not a bar: bars start at zero, which a log scale cannot show.
  json bar = {
      {"mark", {{"type", "point"}, {"filled", true}, {"size", 50}, {"tooltip", true}}},
      {"encoding",
       {{"x", x},
        {"tooltip",
         json::array({vl::tip("run", "run"), vl::tip("mode", "mode"),
                      vl::tip("mean_ms", "mean step (ms)", ".4g"),
                      vl::tip("ci_pct", "CI half-width (%)", ".2f"), vl::tip("n", "samples"),
                      vl::tip("throughput", "throughput", ".4g"), vl::tip("unit", "unit")})}}}};
  json err = {
      {"mark", {{"type", "rule"}, {"color", "black"}}},
      {"encoding", {{"x", vl::field("lo_ms", "quantitative", "")}, {"x2", {{"field", "hi_ms"}}}}}};
  s["layer"] = json::array({bar, err});
  return {"Step time per run",
          "One dot per workload and mode: the mean time of a measured (steady-state) step, log "
          "scale; the black line is its 95% confidence interval (often narrower than the line "
          "is thick). Throughput in the workload's own unit is in the table and the tooltip.",
          s};
}

std::optional<Chart> latency_chart(const std::vector<store::StoredRun>& runs) {
  json values = json::array();
  for (const auto& r : runs) {
    if (r.mode != "infer" || r.result.status != run::RunStatus::kOk) continue;
    const auto& st = r.result.step_time;
    for (const auto& [name, v] : {std::pair{"p50", st.p50}, {"p90", st.p90}, {"p99", st.p99}})
      if (std::isfinite(v))
        values.push_back({{"run", run_label(r)}, {"percentile", name}, {"ms", v * 1e3}});
  }
  if (values.empty()) return std::nullopt;
  json s = vl::spec(values, 560);
  s["height"] = {{"step", 16}};
  s["mark"] = {{"type", "point"}, {"filled", true}, {"size", 60}, {"tooltip", true}};
  s["encoding"] = {{"y", vl::field("run", "nominal", "workload, batch, threads")},
                   {"x", vl::log_field("ms", "latency of one batch (ms, log scale)")},
                   {"color", vl::field("percentile", "ordinal", "percentile")}};
  return Chart{"Inference latency percentiles",
               "Per inference run, the 50th, 90th and 99th percentile of the time to process one "
               "batch. A wide p50-p99 spread means the tail latency a service sees is much worse "
               "than the typical step.",
               s};
}

Table runs_table(const std::vector<store::StoredRun>& runs) {
  Table t;
  t.title = "Runs";
  t.columns = {"id",
               "workload",
               "mode",
               "dtype",
               "batch",
               "threads",
               "tag",
               "status",
               "throughput",
               "unit",
               "median step (ms)",
               "CI ±%",
               "CV %",
               "n",
               "steady",
               "reproduce"};
  for (const auto& r : runs) {
    const auto& st = r.result.step_time;
    const bool ok = r.result.status == run::RunStatus::kOk;
    t.rows.push_back(
        {number_cell(r.id, std::to_string(r.id)),
         {r.workload},
         {r.mode},
         {dtype_name(r.dtype) + (r.memory_format == "contiguous" ? "" : " " + r.memory_format)},
         number_cell(r.batch, std::to_string(r.batch)),
         number_cell(r.threads, std::to_string(r.threads)),
         {r.tag},
         {run::status_name(r.result.status) + (ok ? std::string() : ": " + r.result.message)},
         ok ? number_cell(r.result.throughput, vl::number_text(r.result.throughput, 4))
            : Cell{"-", std::nullopt},
         {r.result.throughput_unit},
         number_cell(st.median * 1e3, vl::number_text(st.median * 1e3, 4)),
         number_cell(st.ci_rel * 100, vl::number_text(st.ci_rel * 100, 2)),
         number_cell(st.cv * 100, vl::number_text(st.cv * 100, 2)),
         number_cell(static_cast<double>(st.n), std::to_string(st.n)),
         {r.result.steady_detected ? "yes" : "no (warm-up cap)"},
         {r.result.command}});
  }
  t.note =
      "Newest run per workload, setting (mode, precision, batch, threads, engine, heap, config) "
      "and tag. CI: 95% confidence "
      "half-width of the mean step time over the mean. Click a column to sort.";
  return t;
}

// The two phases of every generative inference run: time to first token, time per output token,
// the tail of single tokens, both rates and the cache (docs/llm.md).
std::optional<Table> generation_table(const std::vector<store::StoredRun>& runs) {
  Table t;
  t.title = "Generation: prefill and decode";
  t.columns = {"id",
               "run",
               "prompt",
               "gen",
               "TTFT mean (ms)",
               "TTFT p99 (ms)",
               "TPOT mean (ms)",
               "TPOT p99 (ms)",
               "inter-token p99 (ms)",
               "prefill tokens/s",
               "decode tokens/s",
               "KV cache"};
  const auto ms = [](double seconds) {
    return number_cell(seconds * 1e3, vl::number_text(seconds * 1e3, 4));
  };
  for (const auto& r : runs) {
    if (!r.result.generation || r.result.status != run::RunStatus::kOk) continue;
    const run::GenerationTimes& g = *r.result.generation;
    t.rows.push_back(
        {number_cell(r.id, std::to_string(r.id)),
         {run_label(r)},
         number_cell(g.prompt, std::to_string(g.prompt)),
         number_cell(g.gen, std::to_string(g.gen)),
         ms(g.ttft.mean),
         ms(g.ttft.p99),
         ms(g.tpot.mean),
         ms(g.tpot.p99),
         ms(g.inter_token.p99),
         number_cell(g.prefill_tokens_per_s, vl::number_text(g.prefill_tokens_per_s, 4)),
         number_cell(g.decode_tokens_per_s, vl::number_text(g.decode_tokens_per_s, 4)),
         number_cell(g.kv_cache_bytes, format_bytes(g.kv_cache_bytes))});
  }
  if (t.rows.empty()) return std::nullopt;
  t.note =
      "A step is one generation: a prefill that makes the first token (TTFT), then gen - 1 decode "
      "calls; TPOT is a step's mean decode call, inter-token the single calls. Prefill tokens/s "
      "= batch x prompt / TTFT, decode tokens/s = batch / TPOT.";
  return t;
}

}  // namespace

std::optional<Section> throughput_section(const ReportData& d) {
  if (d.runs.empty()) return std::nullopt;
  // One row per tag and setting (its canonical key: engine, heap and config included), ordered
  // by workload, mode, batch, threads and precision.
  const auto runs = newest_per_key(d.runs, [](const store::StoredRun& r) {
    return std::make_tuple(r.workload, r.mode, r.batch, r.threads, std::string(dtype_name(r.dtype)),
                           r.memory_format, r.tag, analysis::stored_key(r));
  });
  Section s{"throughput",
            "Throughput and latency",
            "Every run warmed up until its step time was steady, then sampled until the 95% "
            "confidence interval of the mean was within the target or the budget ended.",
            {}};
  s.blocks.push_back(step_time_chart(runs));
  if (auto c = latency_chart(runs)) s.blocks.push_back(*c);
  s.blocks.push_back(runs_table(runs));
  if (auto t = generation_table(runs)) s.blocks.push_back(*t);
  if (auto c = decode_roof_chart(runs)) s.blocks.push_back(*c);
  return s;
}

}  // namespace plumb::report
