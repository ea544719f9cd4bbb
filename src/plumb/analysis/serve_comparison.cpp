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

ThroughputComparison compare_found_rates(const store::StoredServeSession& a,
                                         const store::StoredServeSession& b,
                                         const ComparisonOptions& options) {
  ThroughputComparison t;
  t.runs_a = t.runs_b = 1;
  t.throughput_a = a.found_qps;
  t.throughput_b = b.found_qps;
  if (!(a.found_qps > 0) || !(b.found_qps > 0)) {
    t.verdict = Verdict::kNotComparable;
    t.reason = fmt::format(
        "a side found no rate that keeps the bound (A: {:.3g} q/s, B: {:.3g} "
        "q/s)",
        a.found_qps, b.found_qps);
    return t;
  }
  t.ratio = b.found_qps / a.found_qps;
  t.ci_low = b.found_qps / a.failed_qps;
  t.ci_high = b.failed_qps / a.found_qps;
  t.verdict = judge(t.ci_low, t.ci_high, options.tolerance);
  t.reason = fmt::format(
      "found rates: A held {:.1f} q/s and missed {:.1f}; B held {:.1f} and missed {:.1f}; the "
      "interval is the ratio of the two brackets",
      a.found_qps, a.failed_qps, b.found_qps, b.failed_qps);
  return t;
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
