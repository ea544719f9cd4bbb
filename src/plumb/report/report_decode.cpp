// The decode roof chart of the throughput section (see decode_roof_chart.h).
#include "plumb/report/decode_roof_chart.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include <fmt/format.h>

#include "plumb/analysis/decode_roofline.h"
#include "plumb/report/vega_lite.h"

namespace plumb::report {
namespace {

using vl::json;

struct DecodeSeries {
  std::vector<double> bytes, tpot;
};

std::string decode_series_label(const store::StoredRun& r) {
  return fmt::format("{} threads {}", r.threads, dtype_name(r.dtype));
}

// The roof of one series: tokens/s = BW / bytes at both ends of its points' bytes, with BW from
// the least-squares fit of TPOT on bytes; nothing when the fit is undefined.
void add_roof(const std::string& series, const DecodeSeries& s, json& roof) {
  if (s.bytes.size() < 3) return;
  const auto [lo, hi] = std::minmax_element(s.bytes.begin(), s.bytes.end());
  if (*lo == *hi) return;
  const analysis::DecodeRoofFit fit = analysis::fit_decode_roof(s.bytes, s.tpot);
  if (!std::isfinite(fit.bytes_per_s)) return;
  const std::string label =
      fmt::format("{}: roof {} GB/s (R^2 {})", series, vl::number_text(fit.bytes_per_s / 1e9),
                  vl::number_text(fit.r_squared));
  for (double bytes : {*lo / 1.25, *hi * 1.25})
    roof.push_back({{"series", series},
                    {"roof", label},
                    {"bytes_per_token", bytes},
                    {"tokens_per_s", fit.bytes_per_s / bytes}});
}

}  // namespace

std::optional<Chart> decode_roof_chart(const std::vector<store::StoredRun>& runs) {
  json points = json::array(), roof = json::array();
  std::map<std::string, DecodeSeries> series;
  for (const auto& r : runs) {
    if (r.batch != 1) continue;
    const auto count = analysis::stored_decode_count(r);
    if (!count) continue;
    const auto& g = *r.result.generation;
    if (!std::isfinite(g.tpot.mean) || !(g.tpot.mean > 0)) continue;
    const std::string label = decode_series_label(r);
    series[label].bytes.push_back(count->bytes());
    series[label].tpot.push_back(g.tpot.mean);
    points.push_back({{"run", fmt::format("#{} {}", r.id, r.workload)},
                      {"series", label},
                      {"bytes_per_token", count->bytes()},
                      {"tokens_per_s", g.decode_tokens_per_s},
                      {"tpot_ms", g.tpot.mean * 1e3},
                      {"kv_share", count->kv_fraction()}});
  }
  if (points.empty()) return std::nullopt;
  for (const auto& [label, s] : series) add_roof(label, s, roof);
  json spec = vl::spec(json::array(), 560, 320);
  spec.erase("data");
  const json x = vl::log_field("bytes_per_token", "bytes read per decoded token (log scale)");
  const json y = vl::log_field("tokens_per_s", "decode tokens/s at batch 1 (log scale)");
  json dots = {{"data", {{"values", points}}},
               {"mark", {{"type", "point"}, {"filled", true}, {"size", 60}, {"tooltip", true}}},
               {"encoding",
                {{"x", x},
                 {"y", y},
                 {"color", vl::field("series", "nominal", "threads, precision")},
                 {"tooltip", json::array({vl::tip("run", "run"), vl::tip("series", "series"),
                                          vl::tip("bytes_per_token", "bytes/token", ".3s"),
                                          vl::tip("tokens_per_s", "tokens/s", ".1f"),
                                          vl::tip("tpot_ms", "TPOT ms", ".3f"),
                                          vl::tip("kv_share", "KV share", ".1%")})}}}};
  json line = {{"data", {{"values", roof}}},
               {"mark", {{"type", "line"}, {"strokeDash", json::array({4, 4})}}},
               {"encoding",
                {{"x", {{"field", "bytes_per_token"}, {"type", "quantitative"}}},
                 {"y", {{"field", "tokens_per_s"}, {"type", "quantitative"}}},
                 {"color", {{"field", "series"}, {"type", "nominal"}}},
                 {"detail", {{"field", "roof"}, {"type", "nominal"}}},
                 {"tooltip", json::array({vl::tip("roof", "fitted roof")})}}}};
  spec["layer"] = json::array({line, dots});
  return Chart{
      "Decode on the memory roof",
      "Each point is a generative inference run at batch 1: its decode tokens/s against the "
      "bytes one token reads (weights and KV cache, counted from the model's dimensions). A "
      "decode that streams every weight once per token sits on a line of slope -1; dashed: the "
      "roof tokens/s = BW / bytes with BW fitted over the runs of each thread count and "
      "precision (TPOT = a + bytes / BW, three runs or more). Points below the roof at small "
      "sizes pay the per-token overhead a.",
      spec};
}

}  // namespace plumb::report
