// plumb serve: a workload's inference behind an open-loop load generator and a dynamic batcher,
// in MLPerf LoadGen's scenarios (run/serve_session.h). Server without --qps finds the largest
// Poisson arrival rate whose tail latency stays within the bound, with the batching that reached
// it; Offline gives the throughput ceiling, SingleStream the latency floor. Every query's times
// are stored. Exit 1 when the bound is not reachable (one query alone misses it) or the workload
// fails, and when the search finds no rate that keeps the bound; 2 for bad input. Method and
// figures: docs/serving.md.
#include <cmath>
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "plumb/cli/commands.h"
#include "plumb/cli/config_options.h"
#include "plumb/cli/duration_text.h"
#include "plumb/cli/measure_options.h"
#include "plumb/cli/table.h"
#include "plumb/core/errors.h"
#include "plumb/core/json_text.h"
#include "plumb/core/text.h"
#include "plumb/platform/environment.h"
#include "plumb/run/runner.h"
#include "plumb/run/serve_defaults.h"
#include "plumb/run/serve_session.h"
#include "plumb/store/results_store.h"
#include "plumb/workloads/all_workloads.h"

namespace plumb::cli {
namespace {

using json = nlohmann::ordered_json;

struct ServeFlags {
  MeasureFlags measure;
  ConfigOverrides overrides;
  std::string scenario = "server";
  double qps = 0;
  std::string p90, p99, p999;  // at most one: the bound and its percentile
  int64_t max_batch = 0;       // 0: the workload's default
  std::string max_wait;        // "": the workload's default
  int workers = 1;
  double duration_s = 10;
  double resolution = 0.05;
};

std::string ms(double seconds) {
  return std::isfinite(seconds) ? fmt::format("{:.2f} ms", 1e3 * seconds) : "-";
}

std::string percentile_label(double q) {
  return fmt::format("p{:g}", 100 * q);
}

// The bound and percentile from --p90/--p99/--p999, or the workload's defaults.
void apply_bound(const ServeFlags& f, const run::ServeDefaults& d, run::ServeOptions& o) {
  int given = 0;
  o.bound_s = d.bound_s;
  o.percentile = d.percentile;
  for (const auto& [text, q, flag] :
       {std::tuple{f.p90, 0.90, "--p90"}, std::tuple{f.p99, 0.99, "--p99"},
        std::tuple{f.p999, 0.999, "--p999"}}) {
    if (text.empty()) continue;
    ++given;
    o.bound_s = parse_duration_s(flag, text);
    o.percentile = q;
  }
  if (given > 1) throw UsageError("give one latency bound: --p90, --p99 or --p999");
}

// The key plumb compare matches sessions on, besides workload and scenario.
std::string setting_of(const Workload& w, const run::ServeOptions& o) {
  std::vector<std::string> parts = {
      fmt::format("dtype={}", dtype_name(o.run.dtype)),
      fmt::format("format={}", memory_format_name(o.run.memory_format)),
      fmt::format("threads={}", o.run.threads),
      fmt::format("workers={}", o.workers),
      fmt::format("{}<={:g}ms", percentile_label(o.percentile), 1e3 * o.bound_s),
      fmt::format("max_batch={}", o.policy.max_batch),
      fmt::format("max_wait={:g}ms", 1e3 * o.policy.max_wait_s)};
  if (o.scenario == run::Scenario::kServer && o.rate_qps > 0)
    parts.push_back(fmt::format("qps={:g}", o.rate_qps));
  for (const auto& kv : o.run.config.differences_from(w.default_config())) parts.push_back(kv);
  return join(parts, " ");
}

std::string command_of(const Workload& w, const run::ServeOptions& o) {
  std::vector<std::string> parts = {"plumb serve",
                                    w.info.name,
                                    "--scenario",
                                    run::scenario_name(o.scenario),
                                    fmt::format("--p{:g}", 100 * o.percentile),
                                    fmt::format("{:g}ms", 1e3 * o.bound_s),
                                    "--max-batch",
                                    std::to_string(o.policy.max_batch),
                                    "--max-wait",
                                    fmt::format("{:g}ms", 1e3 * o.policy.max_wait_s),
                                    "--threads",
                                    std::to_string(o.run.threads),
                                    "--duration",
                                    fmt::format("{:g}", o.duration_s),
                                    "--seed",
                                    std::to_string(o.run.seed)};
  if (o.rate_qps > 0) parts.insert(parts.end(), {"--qps", fmt::format("{:g}", o.rate_qps)});
  if (o.workers != 1) parts.insert(parts.end(), {"--workers", std::to_string(o.workers)});
  if (o.run.dtype != Dtype::kFp32) parts.insert(parts.end(), {"--dtype", dtype_name(o.run.dtype)});
  if (o.run.memory_format != MemoryFormat::kContiguous)
    parts.insert(parts.end(), {"--memory-format", memory_format_name(o.run.memory_format)});
  if (o.resolution != run::ServeOptions{}.resolution)
    parts.insert(parts.end(), {"--resolution", fmt::format("{:g}", o.resolution)});
  const auto sets = run::set_flags(w, o.run.config);
  parts.insert(parts.end(), sets.begin(), sets.end());
  return join(parts, " ");
}

store::StoredServeMeasurement stored_measurement(const run::ScenarioRun& r) {
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

store::StoredServeSession stored_session(const Workload& w, const run::ServeOptions& o,
                                         const run::ServeDefaults& d, const run::ServeResult& r,
                                         const std::string& tag) {
  store::StoredServeSession s;
  s.started_at = r.started_at;
  s.workload = w.info.name;
  s.scenario = run::scenario_name(o.scenario);
  s.dtype = dtype_name(o.run.dtype);
  s.setting = setting_of(w, o);
  s.tag = tag;
  s.command = command_of(w, o);
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
  for (const auto& run : r.runs) s.measurements.push_back(stored_measurement(run));
  return s;
}

void print_session(const store::StoredServeSession& s, const run::ServeResult& r) {
  const std::string p = percentile_label(s.percentile);
  std::cout << fmt::format("\n{} {} ({}, {} thread(s) x {} worker(s)): {} <= {}\n", s.workload,
                           s.scenario, s.dtype, s.threads, s.workers, p, ms(s.bound_s));
  Table table({"measurement", "offered q/s", "served q/s", "queries", p, "interval", "p50",
               "mean batch", "queueing", "bound"});
  for (const auto& m : s.measurements) {
    // Offline queries all arrive at once: their latencies measure the run's length, not the
    // server, and are left out.
    const bool latency = m.role != "offline";
    table.add_row({m.role, std::isfinite(m.offered_qps) ? format_number(m.offered_qps, 1) : "-",
                   format_number(m.achieved_qps, 1), std::to_string(m.queries),
                   latency ? ms(m.tail_s) : "-",
                   latency ? fmt::format("[{}, {}]", ms(m.tail_low_s), ms(m.tail_high_s)) : "-",
                   latency ? ms(m.p50_s) : "-", format_number(m.mean_batch, 2),
                   latency ? format_percent(m.queueing_share) : "-", latency ? m.verdict : "-"});
  }
  table.print(std::cout);
  if (const auto* m = store::serve_measurement(s, "single-stream"))
    std::cout << fmt::format("latency floor (single-stream): p50 {}, p90 {}, p99 {}\n",
                             ms(m->p50_s), ms(m->p90_s), ms(m->p99_s));
  if (const auto* m = store::serve_measurement(s, "offline"))
    std::cout << fmt::format("throughput ceiling (offline, batch {}): {:.1f} q/s\n",
                             s.document.value("offline_batch", s.max_batch), m->achieved_qps);
  if (!s.reachable) {
    const auto* floor = store::serve_measurement(s, "single-stream");
    std::cout << fmt::format(
        "not reachable: one query alone takes {} at {} (bound {}); raise the bound or "
        "shrink the model\n",
        ms(floor->tail_s), p, ms(s.bound_s));
    return;
  }
  if (s.searched) {
    if (s.found_qps > 0) {
      const auto* at = store::serve_found_measurement(s);
      const std::string above =
          store::serve_bracket_is_ceiling(s)
              ? fmt::format(
                    "no rate tried above it missed, and the Offline ceiling ({:.1f} q/s) "
                    "bounds it",
                    s.failed_qps)
              : fmt::format("{:.1f} q/s missed", s.failed_qps);
      std::cout << fmt::format(
          "found: {:.1f} q/s keeps {} <= {} ({} [{}, {}] over {} queries); {}. Batching there: "
          "mean {:.2f} queries per batch, largest {}, max-wait {}; queueing {} of latency\n",
          s.found_qps, p, ms(s.bound_s), ms(at->tail_s), ms(at->tail_low_s), ms(at->tail_high_s),
          at->queries, above, at->mean_batch, at->largest_batch, ms(s.max_wait_s),
          format_percent(at->queueing_share));
    } else {
      std::cout << fmt::format("found: no rate down to {:.2f} q/s kept {} <= {}", s.failed_qps, p,
                               ms(s.bound_s));
      // Why: a query that waits for one other query's service already needs two service times.
      const auto* floor = store::serve_measurement(s, "single-stream");
      if (floor != nullptr && 2 * floor->p50_s > s.bound_s)
        std::cout << fmt::format(
            ": one query takes {} (p50), so any query that waits for another's service misses "
            "the bound and only rates at which almost none waits could keep it; a trial at a "
            "lower rate would need over {:.0f} s for its queries",
            ms(floor->p50_s), run::kMaxServerTrialS);
      std::cout << '\n';
    }
  }
  for (const auto& w : r.warnings) std::cout << "warning: " << w << '\n';
}

}  // namespace

void add_serve_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "serve", "Inference under load: tail latency, the rate a latency bound allows, batching");
  auto name = std::make_shared<std::string>();
  auto f = std::make_shared<ServeFlags>();
  f->measure.mode = "infer";
  cmd->add_option("workload", *name, "Workload name (see plumb list)")->required();
  cmd->add_option("--scenario", f->scenario, "single-stream, server or offline")
      ->capture_default_str();
  auto* qps = cmd->add_option("--qps", f->qps,
                              "Server: arrival rate (Poisson); without it, the largest rate that "
                              "keeps the bound is searched for");
  cmd->add_option("--p99", f->p99, "Tail-latency bound at the 99th percentile, e.g. 20ms");
  cmd->add_option("--p90", f->p90, "... at the 90th percentile");
  cmd->add_option("--p999", f->p999, "... at the 99.9th percentile");
  auto* max_batch = cmd->add_option("--max-batch", f->max_batch, "Largest batch the batcher forms");
  cmd->add_option("--max-wait", f->max_wait,
                  "How long the oldest query may wait for others to join its batch, e.g. 2ms "
                  "(1us: take only the queries already waiting)");
  cmd->add_option("--workers", f->workers, "Serving threads, each running whole batches")
      ->capture_default_str();
  cmd->add_option("--duration", f->duration_s,
                  "Seconds each measurement serves at least (more when the percentile needs "
                  "more queries)")
      ->capture_default_str();
  cmd->add_option("--resolution", f->resolution,
                  "Server search: stop when the failing rate is within this fraction of the held "
                  "one")
      ->capture_default_str();
  add_config_options(*cmd, f->overrides);
  add_measure_options(*cmd, f->measure, 60, 60, SamplingOptions::kWithout);
  cmd->callback([name, f, qps, max_batch, &exit_code] {
    const Workload& w = workloads::default_registry().get(*name);
    const run::ServeDefaults defaults = run::serve_defaults(w.info);
    run::ServeOptions base;
    base.scenario = run::parse_scenario(f->scenario);
    apply_bound(*f, defaults, base);
    base.rate_qps = f->qps;
    if (qps->count() > 0 && !(f->qps > 0 && std::isfinite(f->qps)))
      throw UsageError(fmt::format(
          "--qps must be a positive number of queries per second, got {}; leave it out to "
          "search for the largest rate that keeps the bound",
          f->qps));
    if (qps->count() > 0 && base.scenario != run::Scenario::kServer)
      throw UsageError(
          "--qps sets the Server scenario's arrival rate; drop it or use "
          "--scenario server");
    base.policy.max_batch = max_batch->count() > 0 ? f->max_batch : defaults.max_batch;
    // The wait follows the bound in force, the user's or the default.
    base.policy.max_wait_s = f->max_wait.empty() ? run::default_max_wait_s(base.bound_s)
                                                 : parse_duration_s("--max-wait", f->max_wait);
    base.workers = f->workers;
    base.duration_s = f->duration_s;
    base.resolution = f->resolution;
    const Config config = resolve_config(w, f->overrides);
    auto plans = make_options(w, config, Mode::kInfer, f->measure);
    for (auto& o : plans) {
      base.run = o;
      run::validate_serve_options(base);
    }
    std::cerr << fmt::format(
        "serving defaults for {} ({}): p{:g} <= {:g} ms, max batch {}, max wait {:g} ms — {}\n",
        w.info.name, w.info.domain, 100 * defaults.percentile, 1e3 * defaults.bound_s,
        defaults.max_batch, 1e3 * defaults.max_wait_s, defaults.source);
    auto db = store::ResultsStore::open(f->measure.db);
    std::vector<store::StoredServeSession> done;
    for (const auto& plan : plans) {
      run::ServeOptions o = base;
      o.run = plan;
      std::cerr << command_of(w, o) << '\n';
      const auto progress = [](const std::string& line) { std::cerr << "  " << line << '\n'; };
      run::ServeResult r = run::serve_workload(w, o, progress);
      auto session = stored_session(w, o, defaults, r, f->measure.tag);
      std::vector<std::vector<run::QueryTimes>> queries;
      for (auto& m : r.runs) queries.push_back(std::move(m.queries));  // stored, not kept
      db->save_serve_session(session, queries);
      if (r.status != run::RunStatus::kOk) {
        std::cerr << fmt::format("{} {}: {} ({})\n", w.info.name, dtype_name(o.run.dtype),
                                 run::status_name(r.status), r.message);
        exit_code = 1;
      } else if (!r.reachable || (r.searched && !(r.found_qps > 0))) {
        exit_code = 1;  // the bound cannot be kept: what was asked for was not found
      }
      if (!f->measure.json) print_session(session, r);
      done.push_back(std::move(session));
    }
    if (f->measure.json) {
      if (done.size() == 1) {
        std::cout << json_text(store::serve_session_json(done.front()), 2) << '\n';
      } else {
        json out;
        out["sessions"] = json::array();
        for (const auto& s : done) out["sessions"].push_back(store::serve_session_json(s));
        std::cout << json_text(out, 2) << '\n';
      }
    }
    if (!f->measure.json) std::cout << "stored in " << f->measure.db << '\n';
  });
}

}  // namespace plumb::cli
