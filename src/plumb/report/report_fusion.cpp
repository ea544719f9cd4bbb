// Report section "Fusion opportunities": the patterns mined from each stored operator graph
// (analysis/fusion_mining.h) on the newest probe's roofs, the largest projected savings across
// workloads and per workload, and every fused-kernel check with its projected and realized saving
// side by side (a chart and a table).
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "plumb/analysis/fusion_inputs.h"
#include "plumb/analysis/fusion_mining.h"
#include "plumb/analysis/fusion_realized.h"
#include "plumb/analysis/profile_roofline.h"
#include "plumb/core/errors.h"
#include "plumb/report/report.h"
#include "plumb/report/vega_lite.h"
#include "plumb/store/profile_records.h"

namespace plumb::report {
namespace {

using vl::json;

constexpr size_t kTopAcross = 10;
constexpr size_t kTopPerWorkload = 3;

std::string percent(double fraction) {
  return std::isfinite(fraction) ? fmt::format("{:.1f}%", 100 * fraction) : "-";
}

std::string ms(double seconds) {
  return seconds >= 1 ? fmt::format("{:.3g} s", seconds) : fmt::format("{:.3g} ms", seconds * 1e3);
}

struct Mined {
  const store::StoredProfile* profile = nullptr;
  analysis::FusionMining mining;
  std::string machine;
};

// The check realizing a pattern, with its comparison; nullopt when none was measured.
std::optional<std::pair<const store::StoredFusedKernelCheck*, analysis::RealizedFusion>> realized(
    const ReportData& d, const analysis::FusionPattern& p, int threads, const std::string& machine,
    const analysis::Ceilings& ceilings) {
  const std::string kind = profile::fused_kernel_kind(p.labels, p.edges);
  if (kind.empty()) return std::nullopt;
  const auto* c =
      analysis::matching_check(d.fused_checks, kind, analysis::check_shapes(p), threads, machine);
  if (c == nullptr) return std::nullopt;
  return std::make_pair(c, analysis::realized_fusion(c->check, ceilings));
}

std::string realized_text(
    const std::optional<std::pair<const store::StoredFusedKernelCheck*, analysis::RealizedFusion>>&
        r) {
  if (!r) return "-";
  return fmt::format("{} saved ({}, projected {})", percent(r->second.realized_fraction),
                     r->first->check.kind, percent(r->second.projected_fraction));
}

Chart checks_chart(
    const std::vector<std::pair<const store::StoredFusedKernelCheck*, analysis::RealizedFusion>>&
        checks) {
  json values = json::array();
  for (const auto& [c, r] : checks) {
    const std::string label =
        fmt::format("#{} {} ({} thr)", c->id, c->check.kind, c->check.threads);
    values.push_back(
        {{"check", label}, {"side", "projected (roofline)"}, {"saving", r.projected_fraction}});
    values.push_back(
        {{"check", label}, {"side", "realized (measured)"}, {"saving", r.realized_fraction}});
  }
  json s = vl::spec(values, 520);
  s["height"] = {{"step", 14}};
  s["mark"] = {{"type", "bar"}, {"tooltip", true}};
  s["encoding"] = {{"y", vl::field("check", "nominal", "")},
                   {"yOffset", {{"field", "side"}}},
                   {"x", vl::field("saving", "quantitative", "share of the unfused time saved")},
                   {"color", vl::field("side", "nominal", "")},
                   {"tooltip", json::array({vl::tip("check", "check"), vl::tip("side", "side"),
                                            vl::tip("saving", "saving", ".1%")})}};
  s["encoding"]["x"]["axis"] = {{"format", "%"}};
  return {"Fusion: projected vs realized",
          "For each pattern LibTorch can run fused, the saving the roofline projects for its "
          "unfused operators run as one kernel, and the saving the fused kernel really gave on "
          "the same shapes. A realized saving above the projection means the unfused operators "
          "ran below their roofs (overhead a fused call removes); below it, the fused kernel "
          "leaves bandwidth unused.",
          s};
}

}  // namespace

std::optional<Section> fusion_section(const ReportData& d) {
  if (d.graphs.empty() && d.fused_checks.empty()) return std::nullopt;
  Section s{"fusion",
            "Fusion opportunities",
            "Mined from the operator graph captured with the newest profile of each workload "
            "(plumb analyze fusion): connected groups of operators a compiler could run as one "
            "kernel, found at least twice per step, ranked by the time the machine's roofs say "
            "fusing would save (intermediate tensors neither written nor read back). Where "
            "LibTorch has a fused kernel, it was timed against the unfused operators.",
            {}};
  if (d.probes.empty()) {
    s.blocks.push_back(Paragraph{"No probe is stored, so no roof to project on: run plumb probe."});
    return s;
  }
  const auto& probe = d.probes.back();
  std::vector<Mined> mined;
  std::map<int64_t, analysis::Ceilings> ceilings_of;  // by profile id
  for (const auto& p : d.profiles) {
    const auto graph = d.graphs.find(p.id);
    if (graph == d.graphs.end()) continue;
    try {
      const auto ceilings = analysis::ceilings_from_probe(probe.document, dtype_name(p.dtype),
                                                          p.threads, analysis::PeakKind::kGemm);
      mined.push_back({&p, analysis::mine_fusion(graph->second, ceilings),
                       platform::machine_key(p.environment)});
      ceilings_of[p.id] = ceilings;
    } catch (const UsageError&) {
      // No roof for this precision on the probed machine: left out.
    }
  }
  for (const char* mode : {"infer", "train"}) {
    std::vector<analysis::FusionMining> minings;
    std::vector<std::string> names;
    for (const auto& m : mined)
      if (m.profile->mode == mode) {
        minings.push_back(m.mining);
        names.push_back(m.profile->workload);
      }
    if (minings.empty()) continue;
    const auto merged = analysis::merge_patterns(minings, names);
    Table t{fmt::format("Largest projected savings across workloads ({})", mode),
            {"pattern", "workloads", "count", "measured", "roofline before", "after",
             "projected saving", "of the steps"},
            {},
            "Counts and times per step, summed over the workloads that show the pattern; \"of "
            "the steps\" divides by the sum of their step times. bwd: in backward."};
    for (size_t i = 0; i < merged.size() && i < kTopAcross; ++i) {
      const auto& p = merged[i];
      std::string names_text;
      for (const auto& w : p.workloads) names_text += (names_text.empty() ? "" : ", ") + w;
      t.rows.push_back(
          {(p.backward ? "bwd: " : "") + p.text, names_text,
           number_cell(p.count, std::to_string(p.count)),
           number_cell(p.measured_s, ms(p.measured_s)), number_cell(p.before_s, ms(p.before_s)),
           number_cell(p.after_s, ms(p.after_s)), number_cell(p.saving_s, ms(p.saving_s)),
           number_cell(p.saving_share, percent(p.saving_share))});
    }
    s.blocks.push_back(std::move(t));
  }
  Table per{"Top patterns per workload",
            {"workload", "pattern", "count", "projected saving", "of the step", "realized (check)"},
            {},
            "Realized: the share of the unfused time the fused kernel saved on this pattern's "
            "shapes, beside the projection for that check."};
  for (const auto& m : mined) {
    for (size_t i = 0; i < m.mining.patterns.size() && i < kTopPerWorkload; ++i) {
      const auto& p = m.mining.patterns[i];
      const auto r = realized(d, p, m.profile->threads, m.machine, ceilings_of.at(m.profile->id));
      per.rows.push_back({record_label(*m.profile), (p.backward ? "bwd: " : "") + p.text,
                          number_cell(p.count, std::to_string(p.count)),
                          number_cell(p.saving_s, ms(p.saving_s)),
                          number_cell(p.saving_share, percent(p.saving_share)), realized_text(r)});
    }
  }
  if (!per.rows.empty()) s.blocks.push_back(std::move(per));

  if (!d.fused_checks.empty()) {
    std::vector<std::pair<const store::StoredFusedKernelCheck*, analysis::RealizedFusion>> checks;
    Table t{"Fused-kernel checks",
            {"check", "shapes", "threads", "unfused", "fused", "realized saving",
             "projected saving", "error"},
            {},
            "Medians of interleaved calls. Error = projected minus realized saving, in "
            "percentage points of the unfused time."};
    for (const auto& c : d.fused_checks) {
      analysis::Ceilings ceilings;
      try {
        ceilings = analysis::ceilings_from_probe(probe.document, "fp32", c.check.threads,
                                                 analysis::PeakKind::kGemm);
      } catch (const UsageError&) {
        continue;
      }
      const auto r = analysis::realized_fusion(c.check, ceilings);
      checks.emplace_back(&c, r);
      t.rows.push_back(
          {fmt::format("#{} {}: {} vs {}", c.id, c.check.kind, c.check.unfused, c.check.fused_op),
           c.check.shapes, number_cell(c.check.threads, std::to_string(c.check.threads)),
           number_cell(c.check.unfused_s, ms(c.check.unfused_s)),
           number_cell(c.check.fused_s, ms(c.check.fused_s)),
           number_cell(r.realized_fraction, percent(r.realized_fraction)),
           number_cell(r.projected_fraction, percent(r.projected_fraction)),
           number_cell(r.error_points, fmt::format("{:+.1f} pp", r.error_points))});
    }
    if (!checks.empty()) s.blocks.push_back(checks_chart(checks));
    s.blocks.push_back(std::move(t));
  }
  return s;
}

}  // namespace plumb::report
