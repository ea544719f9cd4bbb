// plumb roofline's reporters (see roofline_report.h).
#include "plumb/jobs/roofline_report.h"

#include <fmt/format.h>

#include "plumb/core/generation.h"
#include "plumb/core/json_number.h"
#include "plumb/report/text_table.h"

namespace plumb::jobs {
namespace {

using report::format_number;
using report::format_percent;
using report::format_seconds;

nlohmann::ordered_json placement_json(const analysis::Placement& p) {
  nlohmann::ordered_json roofs = nlohmann::ordered_json::object();
  for (const auto& r : p.roofs) roofs[r.level] = r.attainable_flops;
  return {{"name", p.name},
          {"seconds", p.seconds},
          {"flops", p.flops},
          {"bytes", p.bytes},
          {"intensity", json_number(p.intensity)},
          {"achieved_flops", json_number(p.achieved_flops)},
          {"achieved_bytes_per_s", json_number(p.achieved_bytes_per_s)},
          {"dtype", p.dtype},
          {"peak_flops", p.peak_flops},
          {"level", p.level},
          {"footprint_level", p.footprint_level},
          {"roof_flops", p.roof},
          {"bound", p.bound},
          {"roof_fraction", json_number(p.roof_fraction)},
          {"utilisation", json_number(p.utilisation)},
          {"dram_fraction", json_number(p.dram_fraction)},
          {"roofs", roofs}};
}

nlohmann::ordered_json ceilings_json(const analysis::Ceilings& ceilings) {
  nlohmann::ordered_json out = {{"peak_flops", ceilings.peak_flops},
                                {"peak_source", ceilings.peak_source},
                                {"by_dtype", nlohmann::ordered_json::object()},
                                {"memory", nlohmann::ordered_json::array()}};
  for (const auto& [roof_dtype, roof] : ceilings.by_dtype)
    out["by_dtype"][roof_dtype] = {{"flops", roof.flops}, {"source", roof.source}};
  for (const auto& m : ceilings.memory)
    out["memory"].push_back({{"level", m.level},
                             {"bytes_per_s", m.bytes_per_s},
                             {"capacity_bytes", m.capacity_bytes},
                             {"ridge_intensity", analysis::ridge_intensity(ceilings, m.level)}});
  return out;
}

void add_placement_row(report::TextTable& t, const analysis::Placement& p) {
  t.add_row({p.name, format_seconds(p.seconds), format_number(p.flops / 1e9, 3),
             format_number(p.bytes / 1e6, 1), format_number(p.intensity, 1),
             format_number(p.achieved_flops / 1e9, 1), p.level, format_number(p.roof / 1e9, 1),
             p.bound, format_percent(p.roof_fraction), format_percent(p.dram_fraction),
             format_percent(p.utilisation)});
}

report::TextTable placement_table() {
  return report::TextTable({"name", "time", "GFLOP", "MB", "FLOP/B", "GFLOP/s", "level",
                            "roof GFLOP/s", "bound", "of roof", "of DRAM BW", "utilisation"});
}

void print_rows(std::ostream& out, const std::vector<analysis::Placement>& rows,
                const analysis::Placement& whole, size_t top) {
  report::TextTable t = placement_table();
  add_placement_row(t, whole);
  const size_t limit = top == 0 ? 25 : top;
  for (size_t i = 0; i < rows.size() && i < limit; ++i) add_placement_row(t, rows[i]);
  t.print(out);
  if (rows.size() > limit) out << "(" << rows.size() - limit << " more rows; --top N)\n";
}

nlohmann::ordered_json placements_json(const std::vector<analysis::Placement>& rows, size_t top) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (size_t i = 0; i < rows.size() && (top == 0 || i < top); ++i)
    out.push_back(placement_json(rows[i]));
  return out;
}

}  // namespace

nlohmann::ordered_json roofline_json(const RooflineJobResult& result, const RooflineView& view) {
  nlohmann::ordered_json out;
  out["workload"] = result.workload;
  out["mode"] = result.mode;
  out["batch"] = result.batch;
  out["threads"] = result.threads;
  out["dtype"] = result.dtype;
  out["by"] = view.by_name;
  out["profile_id"] = result.profile_id;
  out["probe_id"] = result.probe_id;
  out["ceilings"] = ceilings_json(result.ceilings);
  out["step"] = placement_json(result.step);
  out["rows"] = placements_json(result.rows, view.top);
  if (result.phases.empty()) return out;
  out["phase"] = result.phase ? phase_name(*result.phase) : "both";
  out["phases"] = nlohmann::ordered_json::array();
  for (const auto& p : result.phases)
    out["phases"].push_back({{"phase", phase_name(p.time.phase)},
                             {"calls", p.time.calls},
                             {"time_s", p.time.seconds},
                             {"time_per_call_s", p.time.per_call_s()},
                             {"whole", placement_json(p.whole)},
                             {"rows", placements_json(p.rows, view.top)}});
  return out;
}

void print_roofline(std::ostream& out, const RooflineJobResult& result, const RooflineView& view) {
  const auto& ceilings = result.ceilings;
  out << fmt::format("{} {} batch {}, {} thread(s); compute roof {} GFLOP/s ({})\n",
                     result.workload, result.mode, result.batch, result.threads,
                     format_number(ceilings.peak_flops / 1e9, 1), ceilings.peak_source);
  for (const auto& m : ceilings.memory)
    out << fmt::format(
        "  {} roof {} GB/s (triad), ridge at {} FLOP/byte{}\n", m.level,
        format_number(m.bytes_per_s / 1e9, 1),
        format_number(analysis::ridge_intensity(ceilings, m.level), 1),
        m.capacity_bytes > 0
            ? fmt::format(", holds {} KiB", format_number(m.capacity_bytes / 1024.0, 0))
            : "");
  if (result.phases.empty()) print_rows(out, result.rows, result.step, view.top);
  // A generation: each phase on the roofs by itself (a decode reads every weight and the whole
  // KV cache per call: its rows are memory-bound, at a fraction of the DRAM roof).
  for (const auto& p : result.phases) {
    out << fmt::format("\n[{}] {} call(s) per step, {} per step, {} per call\n",
                       phase_name(p.time.phase), format_number(p.time.calls, 0),
                       format_seconds(p.time.seconds), format_seconds(p.time.per_call_s()));
    print_rows(out, p.rows, p.whole, view.top);
  }
  out << "of DRAM BW: achieved bytes/s over the DRAM roof; level: the slowest memory level fast "
         "enough for the measured data rate; bound: "
         "compute or memory:<level> by intensity vs that level's ridge, overhead when "
         "under 10% of that roof was reached\n";
}

}  // namespace plumb::jobs
