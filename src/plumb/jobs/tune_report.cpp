// Text and JSON of a tuning session (see tune_report.h).
#include "plumb/jobs/tune_report.h"

#include <cmath>

#include <fmt/format.h>

#include "plumb/jobs/tune_job.h"
#include "plumb/report/text_table.h"
#include "plumb/store/tune_record.h"

namespace plumb::jobs {
namespace {

using report::format_number;
using report::format_percent;
using report::TextTable;

std::string tune_ratio_text(double ratio) {
  return std::isfinite(ratio) ? fmt::format("{:.2f}x", ratio) : "-";
}

void print_precision_errors(const store::TuneResult& r, std::ostream& out) {
  TextTable precisions({"precision", "error vs fp32", "searched"});
  for (const auto& p : r.precision_errors)
    precisions.add_row(
        {p.dtype,
         std::isfinite(p.error)
             ? fmt::format("{:.2e} ({}{})", p.error, p.measure,
                           std::isfinite(p.logits_relative_l2)
                               ? fmt::format("; logits rel L2 {:.2e}", p.logits_relative_l2)
                               : "")
             : "-",
         p.allowed ? "yes" : (p.note.empty() ? "no" : p.note)});
  precisions.print(out);
}

void print_contributions(const store::TuneResult& r, std::ostream& out) {
  const store::TuneFinal& f = *r.final_runs;
  if (f.contributions.empty()) return;
  out << fmt::format("search's best: {}\n", r.search.best);
  TextTable c({"factor", "stock", "searched", "alone from stock", "removed from best", "kept"});
  for (const auto& row : f.contributions)
    c.add_row({row.factor, row.stock, row.best, tune_ratio_text(row.alone_from_stock),
               tune_ratio_text(row.removed_from_best),
               row.reverted ? fmt::format("no: within {:.0f}% of the best without it",
                                          100 * kTuneNoDifference)
                            : "yes"});
  c.print(out);
  if (!f.most.empty())
    out << "contributed most: " << f.most << " (the best loses the most without it)\n";
}

void print_headroom(const store::TuneResult& r, std::ostream& out) {
  if (!r.headroom) return;
  const store::TuneHeadroom& h = *r.headroom;
  if (h.note.empty() && std::isfinite(h.best.roof_fraction))
    out << fmt::format(
        "headroom: the best runs at {} of the {} roof ({}); stock at {} of the {} roof\n",
        format_percent(h.best.roof_fraction), h.best.dtype, h.best.roof_source,
        format_percent(h.stock.roof_fraction), h.stock.dtype);
  else if (!h.note.empty())
    out << "headroom: " << h.note << '\n';
}

}  // namespace

void print_tune_text(const store::StoredTuneSession& s, std::ostream& out) {
  const store::TuneResult& r = s.result;
  out << fmt::format("\n{} {} batch {} threads {}: {} points, {} trials in {:.1f} s ({})\n",
                     s.workload, s.mode, s.batch, s.threads, r.space.points, r.search.trials,
                     r.search.seconds, r.search.stop_reason);
  print_precision_errors(r, out);
  if (!s.found) {
    out << r.message << '\n';
    return;
  }
  const store::TuneFinal& f = *r.final_runs;
  TextTable table({"configuration", "setting", r.unit, "runs"});
  for (const auto& [name, side] : {std::pair{"stock", &f.stock}, std::pair{"best", &f.best}})
    table.add_row({name, side->setting, format_number(side->throughput, 2),
                   std::to_string(side->run_ids.size())});
  table.print(out);
  if (f.best.setting == "stock")
    out << "the search found nothing faster than stock beyond trial noise; the two rows are the "
           "same configuration, measured apart\n";
  out << fmt::format("speedup: {} [{}, {}] ({})\n", tune_ratio_text(f.speedup.ratio),
                     tune_ratio_text(f.speedup.ci_low), tune_ratio_text(f.speedup.ci_high),
                     f.speedup.verdict);
  print_contributions(r, out);
  print_headroom(r, out);
  out << "reproduce the best: " << f.best.command << '\n';
}

nlohmann::ordered_json tune_json(const store::StoredTuneSession& s) {
  nlohmann::ordered_json out = s.result;
  out["id"] = s.id;
  return out;
}

}  // namespace plumb::jobs
