// plumb serve's job: measure, store, hand over each session (see serve_job.h).
#include "plumb/jobs/serve_job.h"

#include <cmath>
#include <memory>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "plumb/core/precision.h"
#include "plumb/platform/environment.h"
#include "plumb/run/setting_identity.h"
#include "plumb/store/serve_records.h"

namespace plumb::jobs {
namespace {

store::StoredServeMeasurement stored_serve_measurement(const run::ScenarioRun& r) {
  store::StoredServeMeasurement m;
  m.role = r.role;
  m.offered_qps = r.offered_qps;
  m.achieved_qps = r.achieved_qps;
  m.queries = static_cast<int64_t>(r.queries.size());
  m.over_bound = static_cast<int64_t>(r.check.over_bound);
  m.largest_batch = r.largest_batch;
  m.tail_s = r.tail.value;
  m.tail_low_s = r.tail.low;
  m.tail_high_s = r.tail.high;
  m.p50_s = r.p50_s;
  m.p90_s = r.p90_s;
  m.p99_s = r.p99_s;
  m.p999_s = r.p999_s;
  m.verdict = run::tail_verdict_name(r.check.verdict);
  m.queueing_share = r.queueing_share;
  m.mean_batch = r.mean_batch;
  return m;
}

store::StoredServeSession stored_serve_session(const Workload& w, const run::ServeOptions& o,
                                               const run::ServeDefaults& d,
                                               const run::ServeResult& r, const std::string& tag) {
  using json = nlohmann::ordered_json;
  store::StoredServeSession s;
  s.started_at = r.started_at;
  s.workload = w.info.name;
  s.scenario = run::scenario_name(o.scenario);
  s.dtype = dtype_name(o.run.dtype);
  const run::Setting setting = run::serve_setting(w, o);
  s.setting = run::print_setting(setting, run::SettingPrint::kCanonical);
  s.tag = tag;
  s.command = run::print_setting(setting, run::SettingPrint::kReproducer);
  s.threads = o.run.threads;
  s.workers = o.workers;
  s.bound_s = o.bound_s;
  s.percentile = o.percentile;
  s.max_batch = r.max_batch > 0 ? r.max_batch : o.policy.max_batch;
  s.max_wait_s = o.policy.max_wait_s;
  s.fixed_batch = r.fixed_batch;
  s.searched = r.searched;
  s.reachable = r.reachable;
  s.found_qps = r.searched ? r.found_qps : std::nan("");
  s.failed_qps = r.searched ? r.failed_qps : std::nan("");
  s.status = r.status;
  s.message = r.message;
  s.environment = platform::capture_environment(o.run.threads * o.workers, o.run.device);
  json service_ms = json::array();
  for (double t : r.service_s) service_ms.push_back(1e3 * t);
  s.document = {{"batch_sizes", r.batch_sizes},
                {"batch_limit", r.batch_limit},
                {"offline_batch", r.offline_batch},
                {"service_ms", service_ms},
                {"defaults",
                 {{"bound_ms", 1e3 * d.bound_s},
                  {"percentile", 100 * d.percentile},
                  {"max_batch", d.max_batch},
                  {"max_wait_ms", 1e3 * d.max_wait_s},
                  {"source", d.source}}},
                {"config", o.run.config.differences_from(w.default_config())},
                {"memory_format", memory_format_name(o.run.memory_format)},
                {"warnings", r.warnings},
                {"precision_notes", r.precision_notes}};
  for (const auto& run : r.runs) s.measurements.push_back(stored_serve_measurement(run));
  return s;
}

}  // namespace

namespace {

// Measures and stores one session of either kind; returns its exit code.
int serve_one(const Workload& w, const ServeJob& job, const run::RunOptions& setting,
              run::SchedulerKind scheduler, const ServeJobHooks& hooks, ServedSession& served,
              store::ResultsStore& db) {
  run::RunStatus status = run::RunStatus::kOk;
  std::string message;
  bool kept = true;  // the bound is reachable and, when searched, a rate was found
  if (job.token_level) {
    const run::TokenServeOptions o = token_session_options(job, setting, scheduler);
    if (hooks.announce)
      hooks.announce(
          run::print_setting(run::token_serve_setting(w, o), run::SettingPrint::kReproducer));
    run::TokenServeResult r = run::serve_generative(w, o, hooks.progress);
    served = {stored_token_serve_session(w, o, job.token_defaults, r, job.tag), r.warnings};
    std::vector<run::TokenServeTrace> traces;
    for (auto& m : r.runs) traces.push_back(std::move(m.trace));  // stored, not kept
    db.save_token_serve_session(served.stored, traces);
    status = r.status;
    message = r.message;
    kept = r.reachable && (!r.searched || r.found_rate > 0);
  } else {
    run::ServeOptions o = job.base;
    o.run = setting;
    if (hooks.announce)
      hooks.announce(run::print_setting(run::serve_setting(w, o), run::SettingPrint::kReproducer));
    run::ServeResult r = run::serve_workload(w, o, hooks.progress);
    served = {stored_serve_session(w, o, job.defaults, r, job.tag), r.warnings};
    std::vector<std::vector<run::QueryTimes>> queries;
    for (auto& m : r.runs) queries.push_back(std::move(m.queries));  // stored, not kept
    db.save_serve_session(served.stored, queries);
    status = r.status;
    message = r.message;
    kept = r.reachable && (!r.searched || r.found_qps > 0);
  }
  if (status != run::RunStatus::kOk) {
    if (hooks.announce)
      hooks.announce(fmt::format("{} {}: {} ({})", w.info.name, dtype_name(setting.dtype),
                                 run::status_name(status), message));
    return 1;
  }
  return kept ? 0 : 1;  // the bound cannot be kept: what was asked for was not found
}

}  // namespace

run::TokenServeOptions token_session_options(const ServeJob& job, const run::RunOptions& setting,
                                             run::SchedulerKind scheduler) {
  run::TokenServeOptions o = job.token;
  o.run = setting;
  o.scheduler.kind = scheduler;
  if (scheduler == run::SchedulerKind::kStatic && job.schedulers.size() > 1)
    o.scheduler.chunk_tokens = 0;
  return o;
}

ServeJobResult run_serve_job(const Workload& w, const ServeJob& job, const ServeJobHooks& hooks) {
  auto db = store::ResultsStore::open(job.db);
  ServeJobResult out;
  std::vector<run::SchedulerKind> schedulers = job.schedulers;
  if (schedulers.empty()) schedulers.push_back(job.token.scheduler.kind);
  if (!job.token_level) schedulers.resize(1);  // one-shot sessions have no token scheduler
  for (const auto& setting : job.settings) {
    for (const run::SchedulerKind scheduler : schedulers) {
      ServedSession served;
      const int code = serve_one(w, job, setting, scheduler, hooks, served, *db);
      if (code != 0) out.exit_code = code;
      if (hooks.done) hooks.done(served);
      out.sessions.push_back(std::move(served));
    }
  }
  return out;
}

}  // namespace plumb::jobs
