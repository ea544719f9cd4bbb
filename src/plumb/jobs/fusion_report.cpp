// plumb analyze fusion's reporters (see fusion_report.h): one JSON document, or per workload
// the ranked patterns and the fused-kernel checks, then the patterns across workloads.
#include "plumb/jobs/fusion_report.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "plumb/core/json_number.h"
#include "plumb/report/text_table.h"

namespace plumb::jobs {
namespace {

using report::format_percent;
using report::format_seconds;

nlohmann::ordered_json realized_json(const FusionRealized& r) {
  const auto& c = r.stored.check;
  const auto& x = r.comparison;
  return {{"check_id", r.stored.id},
          {"kind", c.kind},
          {"unfused", c.unfused},
          {"fused_op", c.fused_op},
          {"repetitions", c.repetitions},
          {"unfused_s", c.unfused_s},
          {"fused_s", c.fused_s},
          {"realized_saving_s", x.realized_saving_s},
          {"realized_fraction", json_number(x.realized_fraction)},
          {"projected_before_s", x.projection.before_s},
          {"projected_after_s", x.projection.after_s},
          {"projected_fraction", json_number(x.projected_fraction)},
          {"error_points", json_number(x.error_points)},
          {"max_abs_diff", json_number(c.max_abs_diff)}};
}

nlohmann::ordered_json pattern_json(const analysis::FusionPattern& p,
                                    const std::map<std::string, FusionRealized>& realized) {
  nlohmann::ordered_json edges = nlohmann::ordered_json::array();
  for (const auto& [a, b] : p.edges) edges.push_back({a, b});
  nlohmann::ordered_json j = {
      {"pattern", p.text},
      {"scope", p.backward ? "backward" : "forward"},
      {"labels", p.labels},
      {"classes", p.classes},
      {"edges", edges},
      {"count", p.count},
      {"measured_s", p.measured_s},
      {"measured_share", json_number(p.step_s > 0 ? p.measured_s / p.step_s : NAN)},
      {"roofline_before_s", p.before_s},
      {"roofline_after_s", p.after_s},
      {"projected_saving_s", p.saving_s},
      {"projected_saving_per_occurrence_s", p.saving_s / std::max(1, p.count)},
      {"projected_saving_share", json_number(p.saving_share)},
      {"example_layer", p.example_layer},
      {"example_calls", p.example_signatures}};
  if (!p.workloads.empty()) j["workloads"] = p.workloads;
  const auto r = realized.find(p.key);
  j["realized"] = r != realized.end() ? realized_json(r->second) : nlohmann::ordered_json();
  return j;
}

nlohmann::ordered_json workload_json(const FusionWorkload& m, size_t top) {
  nlohmann::ordered_json w = {{"workload", m.workload},
                              {"mode", m.mode},
                              {"dtype", m.dtype},
                              {"profile_id", m.profile_id},
                              {"batch", m.batch},
                              {"threads", m.threads},
                              {"step_s", m.mining.step_s},
                              {"nodes", m.mining.nodes},
                              {"edges", m.mining.edges},
                              {"fusible_edges", m.mining.fusible_edges},
                              {"subgraphs", m.mining.subgraphs},
                              {"hubs", m.mining.hubs},
                              {"frequent_patterns", m.mining.patterns.size()}};
  w["patterns"] = nlohmann::ordered_json::array();
  for (size_t i = 0; i < m.mining.patterns.size() && i < top; ++i)
    w["patterns"].push_back(pattern_json(m.mining.patterns[i], m.realized));
  // Every pattern with a check, ranked or not: each kind the workload shows.
  w["checks"] = nlohmann::ordered_json::array();
  for (size_t i = 0; i < m.mining.patterns.size(); ++i) {
    const auto r = m.realized.find(m.mining.patterns[i].key);
    if (r == m.realized.end()) continue;
    auto c = realized_json(r->second);
    c["rank"] = i + 1;
    c["pattern"] = m.mining.patterns[i].text;
    w["checks"].push_back(c);
  }
  return w;
}

void print_patterns(const std::vector<analysis::FusionPattern>& patterns, size_t top,
                    const std::map<std::string, FusionRealized>& realized, bool suite,
                    std::ostream& out) {
  std::vector<std::string> header = {
      "#",     "pattern",          "count",   "measured",        "roofline before",
      "after", "projected saving", "of step", "realized (check)"};
  if (suite) header.push_back("workloads");
  report::TextTable t(header);
  for (size_t i = 0; i < patterns.size() && i < top; ++i) {
    const auto& p = patterns[i];
    const auto r = realized.find(p.key);
    std::string realized_text = "-";
    if (r != realized.end())
      realized_text = fmt::format(
          "{} vs {} projected ({})", format_percent(r->second.comparison.realized_fraction, 0),
          format_percent(r->second.comparison.projected_fraction, 0), r->second.stored.check.kind);
    std::vector<std::string> row = {fmt::format("{}", i + 1),
                                    (p.backward ? "bwd: " : "") + p.text,
                                    fmt::format("{}", p.count),
                                    format_seconds(p.measured_s),
                                    format_seconds(p.before_s),
                                    format_seconds(p.after_s),
                                    format_seconds(p.saving_s),
                                    format_percent(p.saving_share),
                                    realized_text};
    if (suite) {
      std::string names;
      for (const auto& w : p.workloads) names += (names.empty() ? "" : ",") + w;
      row.push_back(names);
    }
    t.add_row(row);
  }
  t.print(out);
  if (patterns.size() > top) out << "(" << patterns.size() - top << " more patterns; --top N)\n";
}

void print_checks(const FusionWorkload& m, std::ostream& out) {
  report::TextTable check_table({"rank", "pattern", "check", "unfused", "fused", "realized saving",
                                 "projected saving", "error"});
  for (size_t i = 0; i < m.mining.patterns.size(); ++i) {
    const auto r = m.realized.find(m.mining.patterns[i].key);
    if (r == m.realized.end()) continue;
    const auto& c = r->second.stored.check;
    const auto& x = r->second.comparison;
    check_table.add_row({fmt::format("{}", i + 1), m.mining.patterns[i].text,
                         fmt::format("{}: {} vs {}", c.kind, c.unfused, c.fused_op),
                         format_seconds(c.unfused_s), format_seconds(c.fused_s),
                         format_percent(x.realized_fraction), format_percent(x.projected_fraction),
                         fmt::format("{:+.1f} pp", x.error_points)});
  }
  if (m.realized.empty()) return;
  out << "fused kernels timed on the patterns' shapes (saving as a share of the "
         "unfused time):\n";
  check_table.print(out);
}

}  // namespace

nlohmann::ordered_json fusion_json(const FusionResult& result) {
  nlohmann::ordered_json out;
  out["mode"] = result.mode;
  out["probe_id"] = result.probe_id;
  out["peak"] = result.peak;
  out["max_nodes"] = result.max_nodes;
  out["min_count"] = result.min_count;
  out["workloads"] = nlohmann::ordered_json::array();
  for (const auto& m : result.workloads) out["workloads"].push_back(workload_json(m, result.top));
  if (result.workloads.size() > 1) {
    out["suite"] = nlohmann::ordered_json::array();
    for (size_t i = 0; i < result.suite.size() && i < result.top; ++i)
      out["suite"].push_back(pattern_json(result.suite[i], result.suite_realized));
  }
  return out;
}

void print_fusion(const FusionResult& result, std::ostream& out) {
  for (const auto& m : result.workloads) {
    out << fmt::format(
        "\n{} {} ({}, batch {}, {} thread(s), profile {}): {} operators, {} edges ({} fusible), "
        "{} fusible subgraphs, {} frequent patterns; step {}\n",
        m.workload, m.mode, m.dtype, m.batch, m.threads, m.profile_id, m.mining.nodes,
        m.mining.edges, m.mining.fusible_edges, m.mining.subgraphs, m.mining.patterns.size(),
        format_seconds(m.mining.step_s));
    print_patterns(m.mining.patterns, result.top, m.realized, false, out);
    print_checks(m, out);
  }
  if (result.workloads.size() > 1) {
    out << fmt::format("\nacross {} workloads:\n", result.workloads.size());
    print_patterns(result.suite, result.top, result.suite_realized, true, out);
  }
  out << "\nprojected: roofline time of the operators as they run minus the roofline time "
         "of one fused kernel (intermediates neither written nor read back); realized: "
         "the fused kernel's measured saving on the same shapes, against the projection "
         "for that check (docs/fusion.md)\n";
}

}  // namespace plumb::jobs
