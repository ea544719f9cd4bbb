// Report section "Tuning headroom", from the sessions `plumb tune` stored: per workload, the
// speedup of the best configuration over stock with its interval, what each change the search
// made is worth (taken back from the best, one at a time), and how much of its precision's roof
// the best reaches, with the reproducer line of the best.
#include <cmath>
#include <tuple>

#include <fmt/format.h>

#include "plumb/core/ratio_interval.h"
#include "plumb/report/report.h"
#include "plumb/report/vega_lite.h"
#include "plumb/store/tune_record.h"

namespace plumb::report {
namespace {

using vl::json;

Chart speedup_chart(const std::vector<store::StoredTuneSession>& sessions) {
  json values = json::array();
  for (const auto& s : sessions)
    values.push_back({{"setting", setting_label(s)},
                      {"best", s.result.best_setting()},
                      {"speedup", s.speedup},
                      {"low", s.speedup_low},
                      {"high", s.speedup_high}});
  json spec = vl::spec(values, 560, 24 * static_cast<int>(sessions.size()) + 40);
  const json y = vl::field("setting", "nominal", "workload, mode, batch, threads");
  spec["layer"] = json::array(
      {{{"mark", {{"type", "bar"}, {"tooltip", true}}},
        {"encoding",
         {{"y", y},
          {"x", vl::log_field("speedup", "best over stock (log scale)")},
          {"tooltip",
           json::array({vl::tip("setting", "setting"), vl::tip("best", "best"),
                        vl::tip("speedup", "speedup", ".2f"), vl::tip("low", "interval low", ".2f"),
                        vl::tip("high", "interval high", ".2f")})}}}},
       {{"mark", {{"type", "rule"}, {"color", "black"}}},
        {"encoding",
         {{"y", y},
          {"x", {{"field", "low"}, {"type", "quantitative"}}},
          {"x2", {{"field", "high"}}}}}}});
  return {"Best configuration over stock",
          "Each bar: the throughput of the best configuration the search found over the stock "
          "configuration's, both measured to steady state in alternating runs; the line is plumb "
          "compare's interval of the ratio.",
          spec};
}

Chart contribution_chart(const std::vector<store::StoredTuneSession>& sessions) {
  json values = json::array();
  for (const auto& s : sessions) {
    if (!s.result.final_runs) continue;
    for (const auto& c : s.result.final_runs->contributions) {
      const double removed = c.removed_from_best;
      if (!std::isfinite(removed) || !(removed > 0)) continue;
      values.push_back({{"setting", setting_label(s)},
                        {"change", fmt::format("{}: {} -> {}", c.factor, c.stock, c.best)},
                        {"worth", 1 / removed}});
    }
  }
  json spec = vl::spec(values, 560, 320);
  spec["mark"] = {{"type", "bar"}, {"tooltip", true}};
  spec["encoding"] = {
      {"y", vl::field("setting", "nominal", "workload, mode, batch, threads")},
      {"x",
       vl::field("worth", "quantitative", "best's throughput over the best without this change")},
      {"color", vl::field("change", "nominal", "change")},
      {"yOffset", {{"field", "change"}}},
      {"tooltip", json::array({vl::tip("setting", "setting"), vl::tip("change", "change"),
                               vl::tip("worth", "worth", ".2f")})}};
  return {"What each change is worth",
          "For each setting the search changed from stock: the best configuration's throughput "
          "over the same configuration with that one setting taken back (short trials side by "
          "side). Above 1: the best needs it; about 1: it made no difference (such changes are "
          "reverted to stock before the final measurement).",
          spec};
}

}  // namespace

std::optional<Section> tune_section(const ReportData& d) {
  if (d.tune.empty()) return std::nullopt;
  Section s{"tune",
            "Tuning headroom",
            "From plumb tune: how much faster each workload runs than its stock configuration with "
            "settings that keep what it computes (threads, precision within an output-error "
            "budget, memory format, convolution engine, heap policy, batch within a latency "
            "bound), found by successive halving and measured to steady state (docs/tuning.md).",
            {}};
  const auto newest = newest_per_key(d.tune, [](const auto& x) {
    return std::make_tuple(x.workload, x.mode, x.batch, x.threads, x.tag);
  });
  std::vector<store::StoredTuneSession> found;
  for (const auto& x : newest)
    if (x.found) found.push_back(x);
  if (!found.empty()) {
    s.blocks.push_back(speedup_chart(found));
    s.blocks.push_back(contribution_chart(found));
  }
  Table t{"Every stored tuning",
          {"workload", "mode", "batch", "threads", "stock", "best", "speedup", "contributed most",
           "best vs its roof", "reproducer"},
          {},
          "Stock and best: throughput (mean of the final runs). Speedup: best over stock with its "
          "95% interval. Contributed most: the change whose removal costs the best the most. "
          "Best vs its roof: achieved FLOP/s over the probe's peak for the best's precision."};
  for (const auto& x : d.tune) {
    const store::TuneResult& doc = x.result;
    const std::string& unit = doc.unit;
    if (!x.found) {
      const Cell none{"-"};
      t.rows.push_back({x.workload, x.mode, std::to_string(x.batch), std::to_string(x.threads),
                        none, none, none, none, none,
                        doc.message.empty() ? "not found" : doc.message});
      continue;
    }
    const double stock = doc.final_runs ? doc.final_runs->stock.throughput : NAN;
    const double best = doc.final_runs ? doc.final_runs->best.throughput : NAN;
    std::string roof = "-";
    if (doc.headroom && doc.headroom->note.empty() &&
        std::isfinite(doc.headroom->best.roof_fraction))
      roof = fmt::format("{:.0f}% of {}", 100 * doc.headroom->best.roof_fraction,
                         doc.headroom->best.dtype);
    t.rows.push_back({x.workload, x.mode, std::to_string(x.batch), std::to_string(x.threads),
                      number_cell(stock, vl::number_text(stock) + " " + unit),
                      number_cell(best, fmt::format("{} {} ({})", vl::number_text(best), unit,
                                                    doc.best_setting())),
                      number_cell(x.speedup, ratio_with_interval_text(
                                                 {x.speedup, x.speedup_low, x.speedup_high})),
                      doc.final_runs && !doc.final_runs->most.empty() ? doc.final_runs->most : "-",
                      roof, x.best_command});
  }
  s.blocks.push_back(std::move(t));
  return s;
}

}  // namespace plumb::report
