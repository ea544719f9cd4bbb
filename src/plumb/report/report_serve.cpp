// Report section "Serving under a latency bound", from the sessions `plumb serve` stored: the
// tail latency each Server measurement of a one-shot model reached over the throughput it served,
// per workload and precision, with the bound and the Offline ceiling (the latency-throughput curve
// MLPerf's Server scenario samples), and a table of the rates found with the batching that
// reached them; then the token-level sessions of generative models (report_token_serve.cpp),
// whose rates are requests per second and whose bounds are on TTFT and TPOT, apart.
#include <cmath>
#include <tuple>

#include <fmt/format.h>

#include "plumb/core/text.h"
#include "plumb/report/report.h"
#include "plumb/report/vega_lite.h"
#include "plumb/store/serve_records.h"

namespace plumb::report {
namespace {

using vl::json;

// "dlrm fp32, p99" (+ " [tag]"): one curve.
std::string series_label(const store::StoredServeSession& s) {
  return fmt::format("{} {}, p{:g} <= {:g} ms{}", s.workload, s.dtype, 100 * s.percentile,
                     1e3 * s.bound_s, tag_suffix(s.tag));
}

Chart latency_chart(const std::vector<store::StoredServeSession>& sessions) {
  json points = json::array(), bounds = json::array(), ceilings = json::array();
  for (const auto& s : sessions) {
    const std::string series = series_label(s);
    for (const auto& m : s.measurements) {
      if ((m.role != "trial" && m.role != "server") || !std::isfinite(m.tail_s)) continue;
      points.push_back({{"series", series},
                        {"offered", m.offered_qps},
                        {"served", m.achieved_qps},
                        {"tail_ms", 1e3 * m.tail_s},
                        {"mean_batch", m.mean_batch},
                        {"verdict", m.verdict}});
    }
    bounds.push_back({{"series", series}, {"bound_ms", 1e3 * s.bound_s}});
    if (const auto* offline = store::serve_measurement(s, "offline"))
      ceilings.push_back({{"series", series}, {"ceiling", offline->achieved_qps}});
  }
  json spec = vl::spec(json::array(), 560, 320);
  spec.erase("data");
  const json color = vl::field("series", "nominal", "workload, precision, bound");
  json curve = {
      {"data", {{"values", points}}},
      {"mark", {{"type", "line"}, {"point", true}, {"tooltip", true}}},
      {"encoding",
       {{"x", vl::field("served", "quantitative", "queries/s served")},
        {"y", vl::log_field("tail_ms", "tail latency at the bound's percentile (ms, log scale)")},
        {"color", color},
        {"order", {{"field", "offered"}, {"type", "quantitative"}}},
        {"tooltip",
         json::array({vl::tip("series", "series"), vl::tip("offered", "offered q/s", ".1f"),
                      vl::tip("served", "served q/s", ".1f"), vl::tip("tail_ms", "tail ms", ".2f"),
                      vl::tip("mean_batch", "mean batch", ".2f"), vl::tip("verdict", "bound")})}}}};
  json bound = {{"data", {{"values", bounds}}},
                {"mark", {{"type", "rule"}, {"strokeDash", json::array({4, 4})}}},
                {"encoding",
                 {{"y", {{"field", "bound_ms"}, {"type", "quantitative"}}},
                  {"color", {{"field", "series"}, {"type", "nominal"}}}}}};
  json ceiling = {{"data", {{"values", ceilings}}},
                  {"mark", {{"type", "rule"}, {"strokeDash", json::array({1, 3})}}},
                  {"encoding",
                   {{"x", {{"field", "ceiling"}, {"type", "quantitative"}}},
                    {"color", {{"field", "series"}, {"type", "nominal"}}}}}};
  spec["layer"] = json::array({bound, ceiling, curve});
  return {"Tail latency over served throughput",
          "Each point is one Server measurement (Poisson arrivals at a rate): the latency at the "
          "bound's percentile against the queries per second served. Dashed: the bound; dotted: "
          "the Offline ceiling. Latency stays near the service time until the queue builds, then "
          "rises steeply as the rate nears the ceiling; the dynamic batcher moves the knee "
          "right by serving more queries per batch.",
          spec};
}

// The one-shot sessions' chart and table.
void add_query_blocks(const std::vector<store::StoredServeSession>& sessions, Section& s) {
  std::vector<store::StoredServeSession> curves;
  for (const auto& session : sessions)
    if (session.status == run::RunStatus::kOk && session.scenario == "server")
      curves.push_back(session);
  if (!curves.empty())
    s.blocks.push_back(latency_chart(newest_per_key(
        curves, [](const auto& x) { return std::make_tuple(series_label(x), x.setting); })));
  Table t{"Every one-shot session",
          {"workload", "scenario", "precision", "bound", "found rate", "tail at found",
           "mean batch", "queueing", "offline ceiling", "single-stream p90", "status"},
          {},
          "Found rate: the highest rate that kept the bound, and the lowest tried above it that "
          "did not (or the Offline ceiling, when none above it was tried). Tail at found: the "
          "percentile's value with its 95% interval. Queueing: the "
          "share of latency spent waiting for a batch to start."};
  for (const auto& x : sessions) {
    const auto* found = store::serve_found_measurement(x);
    const auto* offline = store::serve_measurement(x, "offline");
    const auto* single = store::serve_measurement(x, "single-stream");
    std::string status = x.status == run::RunStatus::kOk
                             ? (x.reachable ? "ok" : "not reachable")
                             : std::string(run::status_name(x.status)) + ": " + x.message;
    std::string rate = "-";
    if (x.searched && x.found_qps > 0)
      rate = fmt::format("{} q/s ({} {})", vl::number_text(x.found_qps),
                         store::serve_bracket_is_ceiling(x) ? "ceiling" : "missed at",
                         vl::number_text(x.failed_qps));
    else if (x.searched && x.reachable)
      rate = "none held";
    else if (found != nullptr)
      rate = fmt::format("{} q/s offered, {}", vl::number_text(found->offered_qps), found->verdict);
    t.rows.push_back(
        {x.workload, x.scenario, x.dtype,
         fmt::format("p{:g} <= {:g} ms", 100 * x.percentile, 1e3 * x.bound_s),
         x.searched && x.found_qps > 0 ? number_cell(x.found_qps, rate) : Cell{rate},
         found != nullptr
             ? Cell{fmt::format("{} [{}, {}]", format_ms(found->tail_s),
                                format_ms(found->tail_low_s), format_ms(found->tail_high_s))}
             : Cell{"-"},
         found != nullptr ? number_cell(found->mean_batch, fmt::format("{:.2f}", found->mean_batch))
                          : Cell{"-"},
         found != nullptr ? Cell{fmt::format("{:.0f}%", 100 * found->queueing_share)} : Cell{"-"},
         offline != nullptr
             ? number_cell(offline->achieved_qps, vl::number_text(offline->achieved_qps) + " q/s")
             : Cell{"-"},
         single != nullptr ? Cell{format_ms(single->p90_s)} : Cell{"-"}, status});
  }
  s.blocks.push_back(std::move(t));
}

}  // namespace

std::optional<Section> serve_section(const ReportData& d) {
  // A token-level session's rates are requests/s and its latency is not a query's: the one-shot
  // chart and table take kind "query" only.
  std::vector<store::StoredServeSession> queries;
  for (const auto& session : d.serve)
    if (session.kind == "query") queries.push_back(session);
  std::vector<Block> tokens = token_serve_blocks(d);
  if (queries.empty() && tokens.empty()) return std::nullopt;
  Section s{"serve",
            "Serving under a latency bound",
            queries.empty()
                ? "From plumb serve on generative models: requests of prompt and output tokens "
                  "served token by token (docs/serving.md)."
                : "From plumb serve: queries arrive one sample at a time (Poisson, open loop), a "
                  "dynamic batcher groups what is waiting, and the workload's inference step "
                  "serves each batch (MLPerf LoadGen's Server, Offline and SingleStream "
                  "scenarios). The Server search finds the largest rate whose tail latency keeps "
                  "the bound with 95% confidence (docs/serving.md).",
            {}};
  if (!queries.empty()) add_query_blocks(queries, s);
  for (auto& block : tokens) s.blocks.push_back(std::move(block));
  return s;
}

}  // namespace plumb::report
