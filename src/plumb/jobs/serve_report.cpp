// plumb serve's reporters (see serve_report.h).
#include "plumb/jobs/serve_report.h"
#include "plumb/core/text.h"

#include <cmath>
#include <string>

#include <fmt/format.h>

#include "plumb/report/text_table.h"
#include "plumb/run/serve_session.h"
#include "plumb/run/token_serve_session.h"
#include "plumb/store/record_json.h"
#include "plumb/store/serve_records.h"

namespace plumb::jobs {
namespace {

using report::format_number;
using report::format_percent;

std::string serve_percentile_label(double q) {
  return fmt::format("p{:g}", 100 * q);
}

void print_serve_measurements(std::ostream& out, const store::StoredServeSession& s) {
  const std::string p = serve_percentile_label(s.percentile);
  out << fmt::format("\n{} {} ({}, {} thread(s) x {} worker(s)): {} <= {}\n", s.workload,
                     s.scenario, s.dtype, s.threads, s.workers, p, format_ms(s.bound_s));
  report::TextTable table({"measurement", "offered q/s", "served q/s", "queries", p, "interval",
                           "p50", "mean batch", "queueing", "bound"});
  for (const auto& m : s.measurements) {
    // Offline queries all arrive at once: their latencies measure the run's length, not the
    // server, and are left out.
    const bool latency = m.role != "offline";
    table.add_row(
        {m.role, std::isfinite(m.offered_qps) ? format_number(m.offered_qps, 1) : "-",
         format_number(m.achieved_qps, 1), std::to_string(m.queries),
         latency ? format_ms(m.tail_s) : "-",
         latency ? fmt::format("[{}, {}]", format_ms(m.tail_low_s), format_ms(m.tail_high_s)) : "-",
         latency ? format_ms(m.p50_s) : "-", format_number(m.mean_batch, 2),
         latency ? format_percent(m.queueing_share) : "-", latency ? m.verdict : "-"});
  }
  table.print(out);
  if (const auto* m = store::serve_measurement(s, "single-stream"))
    out << fmt::format("latency floor (single-stream): p50 {}, p90 {}, p99 {}\n",
                       format_ms(m->p50_s), format_ms(m->p90_s), format_ms(m->p99_s));
  if (const auto* m = store::serve_measurement(s, "offline"))
    out << fmt::format("throughput ceiling (offline, batch {}): {:.1f} q/s\n",
                       s.document.value("offline_batch", s.max_batch), m->achieved_qps);
}

// The Server search's outcome: the rate found with its batching, or why none kept the bound.
void print_serve_search(std::ostream& out, const store::StoredServeSession& s) {
  const std::string p = serve_percentile_label(s.percentile);
  if (s.found_qps > 0) {
    const auto* at = store::serve_found_measurement(s);
    const std::string above =
        store::serve_bracket_is_ceiling(s)
            ? fmt::format(
                  "no rate tried above it missed, and the Offline ceiling ({:.1f} q/s) "
                  "bounds it",
                  s.failed_qps)
            : fmt::format("{:.1f} q/s missed", s.failed_qps);
    out << fmt::format(
        "found: {:.1f} q/s keeps {} <= {} ({} [{}, {}] over {} queries); {}. Batching there: "
        "mean {:.2f} queries per batch, largest {}, max-wait {}; queueing {} of latency\n",
        s.found_qps, p, format_ms(s.bound_s), format_ms(at->tail_s), format_ms(at->tail_low_s),
        format_ms(at->tail_high_s), at->queries, above, at->mean_batch, at->largest_batch,
        format_ms(s.max_wait_s), format_percent(at->queueing_share));
    return;
  }
  out << fmt::format("found: no rate down to {:.2f} q/s kept {} <= {}", s.failed_qps, p,
                     format_ms(s.bound_s));
  // Why: a query that waits for one other query's service already needs two service times.
  const auto* floor = store::serve_measurement(s, "single-stream");
  if (floor != nullptr && 2 * floor->p50_s > s.bound_s)
    out << fmt::format(
        ": one query takes {} (p50), so any query that waits for another's service misses "
        "the bound and only rates at which almost none waits could keep it; a trial at a "
        "lower rate would need over {:.0f} s for its queries",
        format_ms(floor->p50_s), run::kMaxServerTrialS);
  out << '\n';
}

// A token-level session: each measurement's throughput, TTFT and TPOT tails with their intervals
// and goodput, then the search's outcome.
void print_token_session(std::ostream& out, const ServedSession& served) {
  const store::StoredServeSession& s = served.stored;
  const std::string p = serve_percentile_label(s.percentile);
  out << fmt::format(
      "\n{} {} ({}, {} thread(s)), {} batching{}, max batch {}, KV budget {}: {} TTFT <= {}, "
      "TPOT <= {}\n",
      s.workload, s.scenario, s.dtype, s.threads, s.scheduler,
      s.chunk_tokens > 0 ? fmt::format(" (chunks of {} tokens)", s.chunk_tokens) : "", s.max_batch,
      report::format_bytes(static_cast<double>(s.kv_budget_bytes)), p, format_ms(s.bound_s),
      format_ms(s.tpot_bound_s));
  report::TextTable table({"measurement", "offered/s", "requests/s", "tokens/s", "requests",
                           "TTFT " + p, "interval", "TPOT " + p, "interval", "goodput/s", "batch",
                           "bounds"});
  for (const auto& m : s.measurements) {
    const bool offline = m.role == "offline";
    table.add_row({m.role, std::isfinite(m.offered_qps) ? format_number(m.offered_qps, 2) : "-",
                   format_number(m.achieved_qps, 2), format_number(m.output_token_rate, 1),
                   std::to_string(m.queries), format_ms(m.ttft_tail_s),
                   fmt::format("[{}, {}]", format_ms(m.ttft_low_s), format_ms(m.ttft_high_s)),
                   format_ms(m.tpot_tail_s),
                   fmt::format("[{}, {}]", format_ms(m.tpot_low_s), format_ms(m.tpot_high_s)),
                   offline ? "-" : format_number(m.goodput_rate, 2), format_number(m.mean_batch, 1),
                   offline ? "-" : m.verdict});
  }
  table.print(out);
  for (const auto& note : s.document.value("bound_notes", std::vector<std::string>{}))
    out << "note: " << note << '\n';
  if (!s.reachable) {
    out << fmt::format(
        "not reachable: a request alone takes {} to its first token and {} per output token "
        "(bounds {} and {}); raise the bounds or shorten the prompts\n",
        format_ms(s.document.value("lone_ttft_ms", NAN) / 1e3),
        format_ms(s.document.value("lone_tpot_ms", NAN) / 1e3), format_ms(s.bound_s),
        format_ms(s.tpot_bound_s));
  } else if (s.searched) {
    if (const auto* at = store::serve_found_measurement(s))
      out << fmt::format(
          "found: {:.3g} requests/s keeps {} TTFT <= {} and TPOT <= {} (TTFT {}, TPOT {} over {} "
          "requests); {:.3g} requests/s {}. Goodput there {:.3g} requests/s, {:.1f} output "
          "tokens/s, mean decode batch {:.1f}\n",
          s.found_qps, p, format_ms(s.bound_s), format_ms(s.tpot_bound_s),
          format_ms(at->ttft_tail_s), format_ms(at->tpot_tail_s), at->queries, s.failed_qps,
          store::serve_bracket_is_ceiling(s) ? "is the Offline ceiling" : "did not hold",
          at->goodput_rate, at->output_token_rate, at->mean_batch);
    else if (s.measurements.size() <= 1)  // the Offline ceiling alone: no trial was served
      out << fmt::format(
          "found: no rate tried: below {:.3g} requests/s (half the Offline ceiling) a trial's "
          "requests would take over {:.0f} s to arrive\n",
          s.failed_qps / 2, run::kMaxTokenTrialS);
    else
      out << fmt::format("found: no rate down to {:.3g} requests/s kept both bounds\n",
                         s.failed_qps);
  }
  for (const auto& w : served.warnings) out << "warning: " << w << '\n';
}

}  // namespace

void print_serve_session(std::ostream& out, const ServedSession& served) {
  const store::StoredServeSession& s = served.stored;
  if (s.kind == "token") {
    print_token_session(out, served);
    return;
  }
  print_serve_measurements(out, s);
  if (!s.reachable) {
    const auto* floor = store::serve_measurement(s, "single-stream");
    out << fmt::format(
        "not reachable: one query alone takes {} at {} (bound {}); raise the bound or "
        "shrink the model\n",
        format_ms(floor->tail_s), serve_percentile_label(s.percentile), format_ms(s.bound_s));
    return;
  }
  if (s.searched) print_serve_search(out, s);
  for (const auto& w : served.warnings) out << "warning: " << w << '\n';
}

nlohmann::ordered_json serve_job_json(const ServeJobResult& result) {
  if (result.sessions.size() == 1) return store::serve_session_json(result.sessions.front().stored);
  nlohmann::ordered_json out;
  out["sessions"] = nlohmann::ordered_json::array();
  for (const auto& s : result.sessions)
    out["sessions"].push_back(store::serve_session_json(s.stored));
  return out;
}

}  // namespace plumb::jobs
