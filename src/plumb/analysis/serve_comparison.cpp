// plumb compare's serve rows (see serve_comparison.h).
#include "plumb/analysis/serve_comparison.h"

#include <cmath>
#include <map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "plumb/store/serve_records.h"

namespace plumb::analysis {

namespace {

std::string match_key(const store::StoredServeSession& s) {
  return fmt::format("{} serve {} {}", s.workload, s.scenario, s.setting);
}

bool passes(const store::StoredServeSession& s, const ComparisonSide& side) {
  for (const auto& [field, value] : side.filters) {
    if (field == "tag" && s.tag != value) return false;
    if (field == "workload" && s.workload != value) return false;
  }
  return true;
}

// Full batches of an offline measurement: each batch's service time (queries of one batch
// share their start and finish).
SideSamples offline_samples(const store::ResultsStore& db, const store::StoredServeSession& s) {
  SideSamples out;
  const auto* m = store::serve_measurement(s, "offline");
  if (m == nullptr) return out;
  // The offline batch (the most efficient size up to --max-batch) is the full batch.
  const int64_t full = s.document.value("offline_batch", s.max_batch);
  std::vector<double> batch_s;
  double last_start = -1;
  for (const auto& q : db.load_serve_queries(m->id)) {
    if (q.batch != full || q.start_s == last_start) continue;
    last_start = q.start_s;
    batch_s.push_back(q.service_s());
  }
  out.runs_step_s.push_back(std::move(batch_s));
  out.units_per_step.push_back(static_cast<double>(full));
  return out;
}

// Every query's latency, one query per "step": queries/s of one stream.
SideSamples latency_samples(const store::ResultsStore& db, const store::StoredServeMeasurement* m) {
  SideSamples out;
  if (m == nullptr) return out;
  std::vector<double> latency;
  for (const auto& q : db.load_serve_queries(m->id)) latency.push_back(q.latency_s());
  out.runs_step_s.push_back(std::move(latency));
  out.units_per_step.push_back(1.0);
  return out;
}

// `unit`: "q/s" for one-shot sessions, "req/s" for token-level ones (their rates are requests).
ThroughputComparison compare_found_rates(const store::StoredServeSession& a,
                                         const store::StoredServeSession& b,
                                         const ComparisonOptions& options,
                                         const char* unit = "q/s") {
  ThroughputComparison t;
  t.runs_a = t.runs_b = 1;
  t.throughput_a = a.found_qps;
  t.throughput_b = b.found_qps;
  if (!(a.found_qps > 0) || !(b.found_qps > 0)) {
    t.verdict = Verdict::kNotComparable;
    t.reason = fmt::format(
        "a side found no rate that keeps the bound (A: {:.3g} {}, B: {:.3g} "
        "{})",
        a.found_qps, unit, b.found_qps, unit);
    return t;
  }
  t.ratio = b.found_qps / a.found_qps;
  t.ci_low = b.found_qps / a.failed_qps;
  t.ci_high = b.failed_qps / a.found_qps;
  t.verdict = judge(t.ci_low, t.ci_high, options.tolerance);
  t.reason = fmt::format(
      "found rates: A held {:.1f} {} and missed {:.1f}; B held {:.1f} and missed {:.1f}; the "
      "interval is the ratio of the two brackets",
      a.found_qps, unit, a.failed_qps, b.found_qps, b.failed_qps);
  return t;
}

// A token-level Offline measurement's output tokens/s from its engine iterations, each a
// "step": every request waits at the start, so both sides of one setting run the same
// iterations and differ only in their durations; output tokens / iterations per step makes the
// throughput the output tokens over the engine's busy time.
SideSamples token_offline_samples(const store::ResultsStore& db,
                                  const store::StoredServeSession& s) {
  SideSamples out;
  const auto* m = store::serve_measurement(s, "offline");
  if (m == nullptr) return out;
  std::vector<double> iteration_s;
  for (const auto& it : db.load_serve_iterations(m->id))
    iteration_s.push_back(it.end_s - it.start_s);
  if (iteration_s.empty()) return out;
  out.units_per_step.push_back(static_cast<double>(m->output_tokens) /
                               static_cast<double>(iteration_s.size()));
  out.runs_step_s.push_back(std::move(iteration_s));
  return out;
}

// One latency tail of a token-level Server at a given rate (TTFT or TPOT at the bounds'
// percentile), as its inverse so that a ratio above 1 is B faster; the interval is the ratio of
// the two tails' order-statistic intervals (A's ends over B's other ends), as the found rates'.
struct Tail {
  double value, low, high;
};
ThroughputComparison compare_tails(const Tail& a, const Tail& b, const char* what,
                                   const ComparisonOptions& options) {
  ThroughputComparison t;
  t.runs_a = t.runs_b = 1;
  t.throughput_a = 1 / a.value;
  t.throughput_b = 1 / b.value;
  const auto bounded = [](const Tail& x) { return x.value > 0 && x.low > 0 && x.high > 0; };
  if (!bounded(a) || !bounded(b) || !std::isfinite(a.high) || !std::isfinite(b.high)) {
    t.verdict = Verdict::kNotComparable;
    t.reason = fmt::format(
        "a side's {} tail has no interval (too few requests for the percentile, or none "
        "measured)",
        what);
    return t;
  }
  t.ratio = a.value / b.value;
  t.ci_low = a.low / b.high;
  t.ci_high = a.high / b.low;
  t.verdict = judge(t.ci_low, t.ci_high, options.tolerance);
  t.reason = fmt::format(
      "{} tails: A {:.3g} ms [{:.3g}, {:.3g}], B {:.3g} ms [{:.3g}, {:.3g}]; the interval is "
      "the ratio of the two order-statistic intervals",
      what, 1e3 * a.value, 1e3 * a.low, 1e3 * a.high, 1e3 * b.value, 1e3 * b.low, 1e3 * b.high);
  return t;
}

// A token-level session's rows: Offline on output tokens/s, a search on its found request rate,
// a given rate on its TTFT and its TPOT tails (a row each).
void add_token_rows(const ComparisonRequest& q, const store::ResultsStore& a,
                    const store::ResultsStore& b, const store::StoredServeSession& sa,
                    const store::StoredServeSession& sb, Comparison& c) {
  ComparisonRow row;
  row.workload = sa.workload;
  row.mode = "serve " + sa.scenario;
  row.setting = sa.setting;
  if (sa.scenario == "offline") {
    row.throughput_unit = "output tokens/s";
    row.throughput = compare_throughput(token_offline_samples(a, sa), token_offline_samples(b, sb),
                                        q.statistics);
    c.rows.push_back(std::move(row));
    return;
  }
  if (sa.searched) {
    row.throughput_unit = "requests/s (found rate)";
    row.throughput = compare_found_rates(sa, sb, q.statistics, "req/s");
    c.rows.push_back(std::move(row));
    return;
  }
  const auto* ma = store::serve_measurement(sa, "server");
  const auto* mb = store::serve_measurement(sb, "server");
  const std::string percentile = fmt::format("p{:g}", 100 * sa.percentile);
  for (const bool ttft : {true, false}) {
    ComparisonRow tail = row;
    const char* what = ttft ? "TTFT" : "TPOT";
    tail.mode = fmt::format("{} {}", row.mode, what);
    tail.throughput_unit = fmt::format("1 / {} {} (1/s)", what, percentile);
    const auto of = [&](const store::StoredServeMeasurement* m) {
      if (m == nullptr) return Tail{NAN, NAN, NAN};
      return ttft ? Tail{m->ttft_tail_s, m->ttft_low_s, m->ttft_high_s}
                  : Tail{m->tpot_tail_s, m->tpot_low_s, m->tpot_high_s};
    };
    tail.throughput = compare_tails(of(ma), of(mb), what, q.statistics);
    c.rows.push_back(std::move(tail));
  }
}

}  // namespace

std::map<std::string, store::StoredServeSession> selected_serve_sessions(
    const store::ResultsStore& db, const ComparisonSide& side) {
  std::map<std::string, store::StoredServeSession> out;
  if (!side.run_ids.empty()) return out;
  for (auto& s : db.load_serve_sessions())
    if (s.status == run::RunStatus::kOk && passes(s, side)) out[match_key(s)] = std::move(s);
  return out;  // id order: the newest of a key wins
}

void add_serve_rows(const ComparisonRequest& q, const store::ResultsStore& a,
                    const store::ResultsStore& b, Comparison& c) {
  const auto sessions_a = selected_serve_sessions(a, q.a);
  const auto sessions_b = selected_serve_sessions(b, q.b);
  for (const auto& [key, sa] : sessions_a) {
    const auto partner = sessions_b.find(key);
    if (partner == sessions_b.end()) {
      c.only_in_a.push_back(key);
      continue;
    }
    const auto& sb = partner->second;
    if (sa.kind == "token") {
      add_token_rows(q, a, b, sa, sb, c);
      continue;
    }
    ComparisonRow row;
    row.workload = sa.workload;
    row.mode = "serve " + sa.scenario;
    row.setting = sa.setting;
    row.throughput_unit = "queries/s";
    if (sa.scenario == "offline") {
      row.throughput =
          compare_throughput(offline_samples(a, sa), offline_samples(b, sb), q.statistics);
    } else if (sa.scenario == "server" && sa.searched) {
      row.throughput = compare_found_rates(sa, sb, q.statistics);
    } else {
      const char* role = sa.scenario == "server" ? "server" : "single-stream";
      row.throughput_unit = "queries/s (1 / mean latency)";
      row.throughput =
          compare_throughput(latency_samples(a, store::serve_measurement(sa, role)),
                             latency_samples(b, store::serve_measurement(sb, role)), q.statistics);
    }
    c.rows.push_back(std::move(row));
  }
  for (const auto& [key, sb] : sessions_b)
    if (!sessions_a.count(key)) c.only_in_b.push_back(key);
}

}  // namespace plumb::analysis
