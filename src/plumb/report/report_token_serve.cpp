// The serving section's part for generative models served token by token (plumb serve on an LLM):
// TTFT and TPOT at the bounds' percentile over the offered request rate with the bounds, goodput
// (requests/s within both bounds) over the offered rate against y = x, the engine's decode batch
// and KV cache occupancy over one measurement per series (where static and continuous batching
// differ visibly), and a table of every token-level session.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "plumb/core/text.h"
#include "plumb/report/report.h"
#include "plumb/report/vega_lite.h"
#include "plumb/store/serve_records.h"

namespace plumb::report {
namespace {

using vl::json;

// Points of the engine timeline chart in all (each series gets an equal share): a measurement of
// a minute at 20 ms per iteration has 3000 iterations, and a page of several would grow by MBs.
constexpr size_t kTimelinePoints = 2000;

// "gpt2 fp32, continuous (chunks of 256), burstiness 0.5" (+ " [tag]"): one series.
std::string token_series_label(const store::StoredServeSession& s) {
  std::string label = fmt::format("{} {}, {}", s.workload, s.dtype, s.scheduler);
  if (s.chunk_tokens > 0) label += fmt::format(" (chunks of {})", s.chunk_tokens);
  if (std::isfinite(s.burstiness) && s.burstiness != 1)
    label += fmt::format(", burstiness {:g}", s.burstiness);
  return label + tag_suffix(s.tag);
}

// The series colour, with room in the legend for a whole series name.
json series_color() {
  json color = vl::field("series", "nominal", "workload, precision, scheduler");
  color["legend"] = {{"labelLimit", 420}, {"titleLimit", 420}};
  return color;
}

// A finite number rounded to `step` (page size: JSON prints the shortest exact form), else null.
json token_number(double value, double step = 0) {
  if (!std::isfinite(value)) return json();
  return step > 0 ? std::round(value / step) * step : value;
}

bool is_rate_run(const store::StoredServeMeasurement& m) {
  return (m.role == "trial" || m.role == "server") && std::isfinite(m.offered_qps);
}

// TTFT or TPOT: which columns of a measurement and of a session a latency chart reads.
struct TokenMetric {
  const char* name;  // "TTFT", "TPOT"
  double store::StoredServeMeasurement::*tail;
  double store::StoredServeMeasurement::*low;
  double store::StoredServeMeasurement::*high;
  std::string store::StoredServeMeasurement::*verdict;
  double store::StoredServeSession::*bound;
};

Chart token_latency_chart(const std::vector<const store::StoredServeSession*>& sessions,
                          const TokenMetric& metric, const std::string& title,
                          const std::string& how_to_read) {
  json points = json::array(), intervals = json::array(), bounds = json::array();
  std::set<std::pair<std::string, double>> bound_seen;
  for (const auto* s : sessions) {
    const std::string series = token_series_label(*s);
    for (const auto& m : s->measurements) {
      if (!is_rate_run(m) || !std::isfinite(m.*metric.tail)) continue;
      points.push_back({{"series", series},
                        {"offered", m.offered_qps},
                        {"served", token_number(m.achieved_qps)},
                        {"tail_ms", 1e3 * (m.*metric.tail)},
                        {"low_ms", token_number(1e3 * (m.*metric.low))},
                        {"high_ms", token_number(1e3 * (m.*metric.high))},
                        {"requests", m.queries},
                        {"verdict", m.*metric.verdict}});
      if (std::isfinite(m.*metric.low) && std::isfinite(m.*metric.high))
        intervals.push_back({{"series", series},
                             {"offered", m.offered_qps},
                             {"low_ms", 1e3 * (m.*metric.low)},
                             {"high_ms", 1e3 * (m.*metric.high)}});
    }
    const double bound = s->*metric.bound;
    if (std::isfinite(bound) && bound_seen.insert({series, bound}).second)
      bounds.push_back({{"series", series}, {"bound_ms", 1e3 * bound}});
  }
  const std::string y_title =
      std::string(metric.name) + " at the bounds' percentile (ms, log scale)";
  const json x = vl::field("offered", "quantitative", "offered rate (requests/s)");
  const json color = series_color();
  json spec = vl::spec(json::array(), 560, 300);
  spec.erase("data");
  json bound_layer = {{"data", {{"values", bounds}}},
                      {"mark", {{"type", "rule"}, {"strokeDash", json::array({4, 4})}}},
                      {"encoding",
                       {{"y", {{"field", "bound_ms"}, {"type", "quantitative"}}},
                        {"color", {{"field", "series"}, {"type", "nominal"}}}}}};
  json interval_layer = {{"data", {{"values", intervals}}},
                         {"mark", {{"type", "rule"}, {"strokeWidth", 1.5}}},
                         {"encoding",
                          {{"x", x},
                           {"y", vl::log_field("low_ms", y_title)},
                           {"y2", {{"field", "high_ms"}}},
                           {"color", color}}}};
  json curve = {
      {"data", {{"values", points}}},
      {"mark", {{"type", "line"}, {"point", true}, {"tooltip", true}}},
      {"encoding",
       {{"x", x},
        {"y", vl::log_field("tail_ms", y_title)},
        {"color", color},
        {"order", {{"field", "offered"}, {"type", "quantitative"}}},
        {"tooltip",
         json::array({vl::tip("series", "series"), vl::tip("offered", "offered req/s", ".2f"),
                      vl::tip("served", "served req/s", ".2f"),
                      vl::tip("tail_ms", std::string(metric.name) + " ms", ".2f"),
                      vl::tip("low_ms", "interval low ms", ".2f"),
                      vl::tip("high_ms", "interval high ms", ".2f"),
                      vl::tip("requests", "requests"), vl::tip("verdict", "bound")})}}}};
  spec["layer"] = json::array({bound_layer, interval_layer, curve});
  return {title, how_to_read, spec};
}

Chart goodput_chart(const std::vector<const store::StoredServeSession*>& sessions) {
  json points = json::array(), ceilings = json::array();
  double largest = 0;
  for (const auto* s : sessions) {
    const std::string series = token_series_label(*s);
    for (const auto& m : s->measurements) {
      if (!is_rate_run(m) || !std::isfinite(m.goodput_rate)) continue;
      points.push_back({{"series", series},
                        {"offered", m.offered_qps},
                        {"goodput", m.goodput_rate},
                        {"served", token_number(m.achieved_qps)},
                        {"good", m.good},
                        {"requests", m.queries},
                        {"tokens", token_number(m.output_token_rate)}});
      largest = std::max({largest, m.offered_qps, m.goodput_rate});
    }
    if (const auto* offline = store::serve_measurement(*s, "offline"))
      if (std::isfinite(offline->achieved_qps))
        ceilings.push_back({{"series", series}, {"ceiling", offline->achieved_qps}});
  }
  const json x = vl::field("offered", "quantitative", "offered rate (requests/s)");
  json spec = vl::spec(json::array(), 560, 300);
  spec.erase("data");
  json diagonal = {{"data",
                    {{"values", json::array({{{"offered", 0}, {"goodput", 0}},
                                             {{"offered", largest}, {"goodput", largest}}})}}},
                   {"mark", {{"type", "line"}, {"color", "#9e9e9e"}, {"strokeWidth", 1}}},
                   {"encoding",
                    {{"x", {{"field", "offered"}, {"type", "quantitative"}}},
                     {"y", {{"field", "goodput"}, {"type", "quantitative"}}}}}};
  json ceiling = {{"data", {{"values", ceilings}}},
                  {"mark", {{"type", "rule"}, {"strokeDash", json::array({1, 3})}}},
                  {"encoding",
                   {{"x", {{"field", "ceiling"}, {"type", "quantitative"}}},
                    {"color", {{"field", "series"}, {"type", "nominal"}}}}}};
  json curve = {
      {"data", {{"values", points}}},
      {"mark", {{"type", "line"}, {"point", true}, {"tooltip", true}}},
      {"encoding",
       {{"x", x},
        {"y", vl::field("goodput", "quantitative", "goodput (requests/s within both bounds)")},
        {"color", series_color()},
        {"order", {{"field", "offered"}, {"type", "quantitative"}}},
        {"tooltip",
         json::array({vl::tip("series", "series"), vl::tip("offered", "offered req/s", ".2f"),
                      vl::tip("goodput", "goodput req/s", ".2f"),
                      vl::tip("served", "served req/s", ".2f"), vl::tip("good", "good requests"),
                      vl::tip("requests", "requests"),
                      vl::tip("tokens", "output tokens/s", ".1f")})}}}};
  spec["layer"] = json::array({diagonal, ceiling, curve});
  return {"Goodput over offered request rate",
          "Each point is one Server measurement: the requests per second that kept both bounds "
          "(TTFT and TPOT) against the rate offered. On the grey line y = x every request "
          "offered was good; below it some missed a bound. Dotted: the Offline ceiling (every "
          "request waiting at the start). Goodput follows the line while the engine keeps up, "
          "peaks near the found rate and falls once queues build: the later it leaves the line, "
          "the more of the engine the scheduler turns into answers within the bounds.",
          spec};
}

// The engine at one instant: what the iteration running then did and held (fractions of the
// session's KV budget).
struct EngineSample {
  double t_s = 0;
  double batch = 0, reserved = 0, used = 0;
};

// One sample per iteration at its start, and one of an idle engine (nothing held) where the
// engine waited before the next iteration or after the last: each holds until the next sample.
std::vector<EngineSample> engine_samples(const std::vector<run::IterationRecord>& iterations,
                                         int64_t kv_budget_bytes) {
  const double budget = kv_budget_bytes > 0 ? static_cast<double>(kv_budget_bytes) : NAN;
  std::vector<EngineSample> out;
  for (size_t i = 0; i < iterations.size(); ++i) {
    const auto& it = iterations[i];
    out.push_back({it.start_s, static_cast<double>(it.decode_batch),
                   static_cast<double>(it.kv_reserved_bytes) / budget,
                   static_cast<double>(it.kv_used_bytes) / budget});
    if (i + 1 == iterations.size() || iterations[i + 1].start_s > it.end_s)
      out.push_back({it.end_s, 0, 0, 0});
  }
  return out;
}

// At most `budget` samples: equal time buckets over the samples' span, each at its start with the
// largest value any sample holding during it had (peaks survive; idle gaps narrower than a
// bucket do not).
std::vector<EngineSample> downsample_max(const std::vector<EngineSample>& samples, size_t budget) {
  if (samples.size() <= budget || budget == 0) return samples;
  const double t0 = samples.front().t_s, t1 = samples.back().t_s;
  if (!(t1 > t0)) {  // every sample at one instant: one bucket
    EngineSample b{t0, 0, 0, 0};
    for (const auto& e : samples)
      b = {t0, std::max(b.batch, e.batch), std::max(b.reserved, e.reserved),
           std::max(b.used, e.used)};
    return {b};
  }
  const double width = (t1 - t0) / static_cast<double>(budget);
  std::vector<EngineSample> out;
  size_t first = 0;  // the sample holding at the bucket's start
  for (size_t k = 0; k < budget; ++k) {
    const double lo = t0 + width * static_cast<double>(k);
    const double hi = k + 1 == budget ? t1 : t0 + width * static_cast<double>(k + 1);
    while (first + 1 < samples.size() && samples[first + 1].t_s <= lo) ++first;
    EngineSample b{lo, 0, 0, 0};
    for (size_t j = first; j < samples.size() && (samples[j].t_s < hi || (k + 1 == budget)); ++j) {
      b.batch = std::max(b.batch, samples[j].batch);
      b.reserved = std::max(b.reserved, samples[j].reserved);
      b.used = std::max(b.used, samples[j].used);
    }
    out.push_back(b);
  }
  return out;
}

// Panels in a column, one per series, each over its own measurement's time. Each panel's two y
// scales are its own; the facet must say so too, or Vega-Lite looks for a shared scale that the
// layers never made.
json timeline_spec(json values, json panel) {
  json spec = vl::faceted(std::move(values), "series", std::move(panel), 1);
  spec["resolve"] = {{"scale", {{"x", "independent"}, {"y", "independent"}}}};
  return spec;
}

std::optional<Chart> timeline_chart(const ReportData& d) {
  const auto timelines = token_timelines(d.serve);
  json values = json::array();
  const size_t per_series = kTimelinePoints / std::max<size_t>(1, timelines.size());
  for (const auto& t : timelines) {
    const auto found = d.serve_iterations.find(t.measurement->id);
    if (found == d.serve_iterations.end() || found->second.empty()) continue;
    const std::string series =
        fmt::format("{}: {} at {} req/s", token_series_label(*t.session), t.measurement->role,
                    vl::number_text(t.measurement->role == "offline" ? t.measurement->achieved_qps
                                                                     : t.measurement->offered_qps));
    for (const auto& e :
         downsample_max(engine_samples(found->second, t.session->kv_budget_bytes), per_series))
      values.push_back({{"series", series},
                        {"t_s", token_number(e.t_s, 1e-4)},
                        {"batch", e.batch},
                        {"reserved", token_number(e.reserved, 1e-4)},
                        {"used", token_number(e.used, 1e-4)}});
  }
  if (values.empty()) return std::nullopt;
  const json x = vl::field("t_s", "quantitative", "time since the measurement started (s)");
  json batch_layer = {
      {"mark", {{"type", "line"}, {"interpolate", "step-after"}, {"color", "#7f7f7f"}}},
      {"encoding",
       {{"x", x},
        {"y",
         {{"field", "batch"},
          {"type", "quantitative"},
          {"title", "decode batch (requests, grey)"},
          {"axis", {{"orient", "left"}}}}}}}};
  json kv_layer = {{"transform", json::array({{{"fold", json::array({"reserved", "used"})},
                                               {"as", json::array({"kv", "share"})}}})},
                   {"mark", {{"type", "line"}, {"interpolate", "step-after"}, {"tooltip", true}}},
                   {"encoding",
                    {{"x", x},
                     {"y",
                      {{"field", "share"},
                       {"type", "quantitative"},
                       {"title", "KV cache (share of the budget)"},
                       {"scale", {{"domain", json::array({0, 1})}}},
                       {"axis", {{"orient", "right"}, {"format", "%"}}}}},
                     {"color", vl::field("kv", "nominal", "KV cache")},
                     {"tooltip", json::array({vl::tip("t_s", "time s", ".3f"), vl::tip("kv", "KV"),
                                              vl::tip("share", "share of budget", ".1%"),
                                              vl::tip("batch", "decode batch")})}}}};
  json panel = {{"width", 560},
                {"height", 130},
                {"layer", json::array({batch_layer, kv_layer})},
                {"resolve", {{"scale", {{"y", "independent"}}}}}};
  return Chart{
      "Engine timeline: decode batch and KV cache",
      "One measurement per series (the search's trial at the found rate, else the run at the "
      "given rate, else Offline), each interval's largest value kept when there are many "
      "iterations. Grey: requests decoded per iteration (left axis); coloured: the KV cache the "
      "running requests reserved and the positions they wrote, as a share of the session's KV "
      "budget (right axis). Static batching runs a batch until its longest request ends: the "
      "batch stays flat, drops to zero while the next one gathers, and its padded rows keep "
      "reserved far above used. Continuous batching refills a freed slot at the next iteration, "
      "so batch and used KV stay near their limits while requests wait.",
      timeline_spec(values, panel)};
}

std::string token_rate_text(const store::StoredServeSession& x,
                            const store::StoredServeMeasurement* at) {
  if (!x.reachable) return "-";
  if (x.searched && x.found_qps > 0)
    return fmt::format("{} req/s ({} {})", vl::number_text(x.found_qps),
                       store::serve_bracket_is_ceiling(x) ? "ceiling" : "missed at",
                       vl::number_text(x.failed_qps));
  if (x.searched) return "none held";
  if (at != nullptr && at->role == "offline")
    return fmt::format("offline: {} req/s", vl::number_text(at->achieved_qps));
  if (at != nullptr)
    return fmt::format("{} req/s offered, {}", vl::number_text(at->offered_qps), at->verdict);
  return "-";
}

Cell tail_cell(double tail, double low, double high) {
  if (!std::isfinite(tail)) return Cell{"-"};
  return number_cell(1e3 * tail,
                     fmt::format("{} [{}, {}]", format_ms(tail), format_ms(low), format_ms(high)));
}

Table token_table(const std::vector<store::StoredServeSession>& sessions) {
  Table t{"Every token-level session",
          {"workload", "precision", "scheduler", "chunk", "burstiness", "bounds", "found rate",
           "TTFT there", "TPOT there", "goodput", "output tokens/s", "mean decode batch", "peak KV",
           "status"},
          {},
          "Found rate: the highest request rate that kept both bounds, and the lowest tried "
          "above it that did not (or the Offline ceiling, when none above it was tried); for a "
          "session at a given rate, that rate and both bounds' verdict. TTFT and TPOT there: at "
          "the bounds' percentile with its 95% interval. Chunk: the prefill tokens an iteration "
          "takes (continuous batching; - runs whole prompts first). Peak KV: the most the running "
          "requests reserved, as a share of the KV budget, and the most they wrote."};
  for (const auto& x : sessions) {
    if (x.kind != "token") continue;
    const auto* at = store::serve_found_measurement(x);
    if (at == nullptr && x.scenario == "offline") at = store::serve_measurement(x, "offline");
    const std::string status = x.status == run::RunStatus::kOk
                                   ? (x.reachable ? "ok" : "not reachable")
                                   : std::string(run::status_name(x.status)) + ": " + x.message;
    const std::string rate = token_rate_text(x, at);
    const double rate_key = x.searched && x.found_qps > 0            ? x.found_qps
                            : at != nullptr && at->role != "offline" ? at->offered_qps
                                                                     : NAN;
    std::vector<Cell> row = {
        x.workload,
        x.dtype,
        x.scheduler,
        x.chunk_tokens > 0
            ? number_cell(static_cast<double>(x.chunk_tokens), std::to_string(x.chunk_tokens))
            : Cell{"-"},
        std::isfinite(x.burstiness) ? number_cell(x.burstiness, fmt::format("{:g}", x.burstiness))
                                    : Cell{"-"},
        fmt::format("p{:g} TTFT <= {:g} ms, TPOT <= {:g} ms", 100 * x.percentile, 1e3 * x.bound_s,
                    1e3 * x.tpot_bound_s),
        std::isfinite(rate_key) ? number_cell(rate_key, rate) : Cell{rate}};
    if (at == nullptr) {
      for (int i = 0; i < 6; ++i) row.emplace_back("-");
    } else {
      const bool offline = at->role == "offline";
      const double reserved = static_cast<double>(at->peak_kv_reserved_bytes);
      row.push_back(tail_cell(at->ttft_tail_s, at->ttft_low_s, at->ttft_high_s));
      row.push_back(tail_cell(at->tpot_tail_s, at->tpot_low_s, at->tpot_high_s));
      row.push_back(
          offline || !std::isfinite(at->goodput_rate)
              ? Cell{"-"}
              : number_cell(at->goodput_rate,
                            fmt::format("{} req/s ({} of {} good)",
                                        vl::number_text(at->goodput_rate), at->good, at->queries)));
      row.push_back(number_cell(at->output_token_rate, vl::number_text(at->output_token_rate)));
      row.push_back(number_cell(at->mean_batch, fmt::format("{:.2f}", at->mean_batch)));
      row.push_back(number_cell(
          reserved,
          x.kv_budget_bytes > 0
              ? fmt::format("{} reserved ({:.0f}% of {}), {} written", format_bytes(reserved),
                            100 * reserved / static_cast<double>(x.kv_budget_bytes),
                            format_bytes(static_cast<double>(x.kv_budget_bytes)),
                            format_bytes(static_cast<double>(at->peak_kv_used_bytes)))
              : fmt::format("{} reserved, {} written", format_bytes(reserved),
                            format_bytes(static_cast<double>(at->peak_kv_used_bytes)))));
    }
    row.push_back(status);
    t.rows.push_back(std::move(row));
  }
  return t;
}

}  // namespace

std::vector<const store::StoredServeSession*> drawn_token_sessions(
    const std::vector<store::StoredServeSession>& sessions) {
  std::map<std::pair<std::string, std::string>, size_t> newest;  // ids ascend
  for (size_t i = 0; i < sessions.size(); ++i) {
    const auto& s = sessions[i];
    if (s.kind == "token" && s.status == run::RunStatus::kOk)
      newest[{token_series_label(s), s.setting}] = i;
  }
  std::vector<size_t> picked;
  for (const auto& [key, i] : newest) picked.push_back(i);
  std::sort(picked.begin(), picked.end());
  std::vector<const store::StoredServeSession*> out;
  for (size_t i : picked) out.push_back(&sessions[i]);
  return out;
}

std::vector<TokenTimeline> token_timelines(const std::vector<store::StoredServeSession>& sessions) {
  // series -> (rank, the session and its measurement); a higher rank, then a newer session, wins.
  std::map<std::string, std::pair<int, TokenTimeline>> best;
  std::vector<std::string> order;  // series in the order first drawn
  for (const auto* s : drawn_token_sessions(sessions)) {
    int rank = 0;
    const store::StoredServeMeasurement* m = nullptr;
    if (s->searched && (m = store::serve_found_measurement(*s)) != nullptr)
      rank = 3;
    else if ((m = store::serve_measurement(*s, "server")) != nullptr)
      rank = 2;
    else if ((m = store::serve_measurement(*s, "offline")) != nullptr)
      rank = 1;
    if (m == nullptr) continue;
    const std::string series = token_series_label(*s);
    auto it = best.find(series);
    if (it == best.end()) order.push_back(series);
    if (it == best.end() || rank >= it->second.first) best[series] = {rank, {s, m}};
  }
  std::vector<TokenTimeline> out;
  for (const auto& series : order) out.push_back(best[series].second);
  return out;
}

std::vector<Block> token_serve_blocks(const ReportData& d) {
  std::vector<Block> blocks;
  bool any = false;
  for (const auto& s : d.serve) any = any || s.kind == "token";
  if (!any) return blocks;
  blocks.push_back(Paragraph{
      "Generative models served token by token: requests of prompt and output tokens arrive "
      "open-loop (gamma arrivals; burstiness 1 is Poisson) and a scheduler runs them on the "
      "model's KV cache one engine iteration at a time. Static batching takes the requests "
      "waiting when the engine is idle and decodes them together until the longest is done, "
      "every row padded to the longest; continuous batching admits a waiting request at any "
      "iteration where a slot and the KV budget are free, and a finished one leaves at once "
      "(Orca, vLLM). A request is good when its time to first token (TTFT) and its time per "
      "output token after the first (TPOT) both keep their bounds; the search finds the highest "
      "rate whose TTFT and TPOT both hold at the percentile."});
  const auto drawn = drawn_token_sessions(d.serve);
  bool any_rate = false;
  for (const auto* s : drawn)
    for (const auto& m : s->measurements) any_rate = any_rate || is_rate_run(m);
  if (any_rate) {
    using M = store::StoredServeMeasurement;
    using S = store::StoredServeSession;
    blocks.push_back(token_latency_chart(
        drawn,
        {"TTFT", &M::ttft_tail_s, &M::ttft_low_s, &M::ttft_high_s, &M::ttft_verdict, &S::bound_s},
        "Time to first token over offered request rate",
        "Each point is one Server measurement (requests arriving at the offered rate): the time "
        "to first token at the bounds' percentile, its 95% interval as a bar, one line per "
        "workload, precision and scheduler; dashed: the TTFT bound. Under static batching a "
        "request that arrives while a batch decodes waits for the whole batch to finish, so TTFT "
        "is high from low rates on; continuous batching admits it at the next iteration, so TTFT "
        "stays near one prefill until slots or the KV budget run out and the queue builds."));
    blocks.push_back(token_latency_chart(
        drawn,
        {"TPOT", &M::tpot_tail_s, &M::tpot_low_s, &M::tpot_high_s, &M::tpot_verdict,
         &S::tpot_bound_s},
        "Time per output token over offered request rate",
        "The same measurements' time per output token after the first (MLPerf's TPOT) at the "
        "bounds' percentile with its interval; dashed: the TPOT bound. It grows with the decode "
        "batch (more requests per iteration) and, under continuous batching without chunks, with "
        "the prompts prefilled between a running request's tokens; chunked prefill caps that "
        "stall. Static batching's stays at its batch's decode time, but its requests wait "
        "longer for their first token (the chart above)."));
    blocks.push_back(goodput_chart(drawn));
  }
  if (auto timeline = timeline_chart(d)) blocks.push_back(std::move(*timeline));
  blocks.push_back(token_table(d.serve));
  return blocks;
}

}  // namespace plumb::report
