// The stored form of a token-level serve session (see serve_job.h): the session's settings and
// what its warm-up measured, and each measurement's summary (run/token_metrics.h) in the
// serve_measurements columns docs/json.md names.
#include <cmath>

#include <nlohmann/json.hpp>

#include "plumb/core/precision.h"
#include "plumb/jobs/serve_job.h"
#include "plumb/platform/environment.h"
#include "plumb/run/setting_identity.h"

namespace plumb::jobs {
namespace {

store::StoredServeMeasurement stored_token_measurement(const run::TokenScenarioRun& r) {
  const run::TokenRunSummary& s = r.summary;
  store::StoredServeMeasurement m;
  m.role = r.role;
  m.offered_qps = r.offered_rate;
  m.achieved_qps = s.request_rate;
  m.queries = static_cast<int64_t>(s.requests);
  m.over_bound = static_cast<int64_t>(s.requests - s.good);
  m.largest_batch = s.largest_decode_batch;
  // End-to-end latency: its median and 99th percentile (the bounds are on TTFT and TPOT).
  m.tail_s = m.tail_low_s = m.tail_high_s = NAN;
  m.p50_s = s.e2e_p50_s;
  m.p90_s = NAN;
  m.p99_s = s.e2e_p99_s;
  m.p999_s = NAN;
  m.verdict = run::tail_verdict_name(s.verdict);
  m.queueing_share = NAN;
  m.mean_batch = s.mean_decode_batch;
  m.output_tokens = s.output_tokens;
  m.good = static_cast<int64_t>(s.good);
  m.output_token_rate = s.output_token_rate;
  m.goodput_rate = s.goodput_rate;
  m.ttft_tail_s = s.ttft.tail.value;
  m.ttft_low_s = s.ttft.tail.low;
  m.ttft_high_s = s.ttft.tail.high;
  m.ttft_p50_s = s.ttft.p50_s;
  m.ttft_p90_s = s.ttft.p90_s;
  m.ttft_p99_s = s.ttft.p99_s;
  m.ttft_over = static_cast<int64_t>(s.ttft.check.over_bound);
  m.ttft_verdict = run::tail_verdict_name(s.ttft.check.verdict);
  m.tpot_tail_s = s.tpot.tail.value;
  m.tpot_low_s = s.tpot.tail.low;
  m.tpot_high_s = s.tpot.tail.high;
  m.tpot_p50_s = s.tpot.p50_s;
  m.tpot_p90_s = s.tpot.p90_s;
  m.tpot_p99_s = s.tpot.p99_s;
  m.tpot_over = static_cast<int64_t>(s.tpot.check.over_bound);
  m.tpot_verdict = run::tail_verdict_name(s.tpot.check.verdict);
  m.itl_p50_s = s.itl_p50_s;
  m.itl_p99_s = s.itl_p99_s;
  m.queueing_mean_s = s.queueing_mean_s;
  m.peak_kv_reserved_bytes = s.peak_kv_reserved_bytes;
  m.peak_kv_used_bytes = s.peak_kv_used_bytes;
  return m;
}

nlohmann::ordered_json range_json(const run::LengthRange& r) {
  return {{"low", r.low}, {"high", r.high}};
}

}  // namespace

store::StoredServeSession stored_token_serve_session(const Workload& w,
                                                     const run::TokenServeOptions& o,
                                                     const run::TokenServeDefaults& d,
                                                     const run::TokenServeResult& r,
                                                     const std::string& tag) {
  store::StoredServeSession s;
  s.kind = "token";
  s.started_at = r.started_at;
  s.workload = w.info.name;
  s.scenario = run::scenario_name(o.scenario);
  s.dtype = dtype_name(o.run.dtype);
  // The key and reproducer carry the bounds as applied (scaled ones included).
  run::TokenServeOptions applied = o;
  applied.bounds = r.bounds;
  const run::Setting setting = run::token_serve_setting(w, applied);
  s.setting = run::print_setting(setting, run::SettingPrint::kCanonical);
  s.command = run::print_setting(setting, run::SettingPrint::kReproducer);
  s.tag = tag;
  s.threads = o.run.threads;
  s.workers = 1;
  s.bound_s = r.bounds.ttft_s;
  s.tpot_bound_s = r.bounds.tpot_s;
  s.percentile = r.bounds.percentile;
  s.max_batch = o.scheduler.max_batch;
  s.max_wait_s = o.scheduler.max_wait_s;
  s.scheduler = run::scheduler_name(o.scheduler.kind);
  s.chunk_tokens = o.scheduler.chunk_tokens;
  s.kv_budget_bytes = r.kv_budget_bytes;
  s.burstiness = o.burstiness;
  s.searched = r.searched;
  s.reachable = r.reachable;
  s.found_qps = r.searched ? r.found_rate : NAN;
  s.failed_qps = r.searched ? r.failed_rate : NAN;
  s.status = r.status;
  s.message = r.message;
  s.environment = platform::capture_environment(o.run.threads, o.run.device);
  nlohmann::ordered_json lengths = {{"describe", o.mix.describe()}};
  if (o.mix.pairs.empty()) {
    lengths["prompt_tokens"] = range_json(o.mix.prompt);
    lengths["output_tokens"] = range_json(o.mix.output);
  } else {
    lengths["file"] = o.mix.file;
    lengths["pairs"] = o.mix.pairs.size();
  }
  s.document = {{"lengths", lengths},
                {"kv_bytes_per_position", r.kv_bytes_per_position},
                {"slot_positions", r.slot_positions},
                {"lone_ttft_ms", 1e3 * r.lone_ttft_s},
                {"lone_tpot_ms", 1e3 * r.lone_tpot_s},
                {"full_batch_tpot_ms", 1e3 * r.full_batch_tpot_s},
                {"bound_notes", r.bound_notes},
                {"defaults",
                 {{"ttft_ms", 1e3 * d.ttft_s},
                  {"tpot_ms", 1e3 * d.tpot_s},
                  {"percentile", 100 * d.percentile},
                  {"max_batch", d.max_batch},
                  {"prompt_tokens", d.prompt_tokens},
                  {"output_tokens", d.output_tokens},
                  {"source", d.source}}},
                {"config", o.run.config.differences_from(w.default_config())},
                {"warnings", r.warnings},
                {"precision_notes", r.precision_notes}};
  for (const auto& run : r.runs) s.measurements.push_back(stored_token_measurement(run));
  return s;
}

}  // namespace plumb::jobs
