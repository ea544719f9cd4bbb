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
#include <utility>

#include "plumb/cli/commands.h"
#include "plumb/cli/config_options.h"
#include "plumb/cli/duration_text.h"
#include "plumb/cli/job_command.h"
#include "plumb/cli/measure_options.h"
#include "plumb/core/errors.h"
#include "plumb/jobs/serve_job.h"
#include "plumb/jobs/serve_report.h"
#include "plumb/run/serve_defaults.h"
#include "plumb/run/serve_session.h"
#include "plumb/store/results_store.h"
#include "plumb/workloads/all_workloads.h"

namespace plumb::cli {
namespace {

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

// The options a serve callback reads besides the flags: whether --qps and --max-batch were given.
struct ServeGiven {
  CLI::Option* qps = nullptr;
  CLI::Option* max_batch = nullptr;
};

ServeGiven declare_serve_options(CLI::App& cmd, std::string& name, ServeFlags& f) {
  cmd.add_option("workload", name, "Workload name (see plumb list)")->required();
  cmd.add_option("--scenario", f.scenario, "single-stream, server or offline")
      ->capture_default_str();
  ServeGiven given;
  given.qps = cmd.add_option("--qps", f.qps,
                             "Server: arrival rate (Poisson); without it, the largest rate that "
                             "keeps the bound is searched for");
  cmd.add_option("--p99", f.p99, "Tail-latency bound at the 99th percentile, e.g. 20ms");
  cmd.add_option("--p90", f.p90, "... at the 90th percentile");
  cmd.add_option("--p999", f.p999, "... at the 99.9th percentile");
  given.max_batch = cmd.add_option("--max-batch", f.max_batch, "Largest batch the batcher forms");
  cmd.add_option("--max-wait", f.max_wait,
                 "How long the oldest query may wait for others to join its batch, e.g. 2ms "
                 "(1us: take only the queries already waiting)");
  cmd.add_option("--workers", f.workers, "Serving threads, each running whole batches")
      ->capture_default_str();
  cmd.add_option("--duration", f.duration_s,
                 "Seconds each measurement serves at least (more when the percentile needs "
                 "more queries)")
      ->capture_default_str();
  cmd.add_option("--resolution", f.resolution,
                 "Server search: stop when the failing rate is within this fraction of the held "
                 "one")
      ->capture_default_str();
  add_config_options(cmd, f.overrides);
  add_measure_options(cmd, f.measure, 60, 60, SamplingOptions::kWithout);
  return given;
}

// The job the flags ask for; throws UsageError for a rate, bound or setting out of range.
jobs::ServeJob serve_job_from(const Workload& w, const ServeFlags& f, const ServeGiven& given) {
  jobs::ServeJob job;
  job.defaults = run::serve_defaults(w.info);
  run::ServeOptions& base = job.base;
  base.scenario = run::parse_scenario(f.scenario);
  apply_bound(f, job.defaults, base);
  base.rate_qps = f.qps;
  if (given.qps->count() > 0 && !(f.qps > 0 && std::isfinite(f.qps)))
    throw UsageError(fmt::format(
        "--qps must be a positive number of queries per second, got {}; leave it out to "
        "search for the largest rate that keeps the bound",
        f.qps));
  if (given.qps->count() > 0 && base.scenario != run::Scenario::kServer)
    throw UsageError(
        "--qps sets the Server scenario's arrival rate; drop it or use "
        "--scenario server");
  base.policy.max_batch = given.max_batch->count() > 0 ? f.max_batch : job.defaults.max_batch;
  // The wait follows the bound in force, the user's or the default.
  base.policy.max_wait_s = f.max_wait.empty() ? run::default_max_wait_s(base.bound_s)
                                              : parse_duration_s("--max-wait", f.max_wait);
  base.workers = f.workers;
  base.duration_s = f.duration_s;
  base.resolution = f.resolution;
  job.settings = make_options(w, resolve_config(w, f.overrides), Mode::kInfer, f.measure);
  for (const auto& o : job.settings) {
    run::ServeOptions checked = base;
    checked.run = o;
    run::validate_serve_options(checked);
  }
  return storing_per(std::move(job), f.measure);
}

}  // namespace

void add_serve_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "serve", "Inference under load: tail latency, the rate a latency bound allows, batching");
  auto name = std::make_shared<std::string>();
  auto f = std::make_shared<ServeFlags>();
  f->measure.mode = "infer";
  const ServeGiven given = declare_serve_options(*cmd, *name, *f);
  cmd->callback([name, f, given, &exit_code] {
    const Workload& w = workloads::default_registry().get(*name);
    const jobs::ServeJob job = serve_job_from(w, *f, given);
    const run::ServeDefaults& d = job.defaults;
    std::cerr << fmt::format(
        "serving defaults for {} ({}): p{:g} <= {:g} ms, max batch {}, max wait {:g} ms — {}\n",
        w.info.name, w.info.domain, 100 * d.percentile, 1e3 * d.bound_s, d.max_batch,
        1e3 * d.max_wait_s, d.source);
    jobs::ServeJobHooks hooks;
    hooks.announce = print_progress;
    hooks.progress = [](const std::string& line) { std::cerr << "  " << line << '\n'; };
    if (!f->measure.json)
      hooks.done = [](const jobs::ServedSession& s) { jobs::print_serve_session(std::cout, s); };
    const jobs::ServeJobResult result = jobs::run_serve_job(w, job, hooks);
    if (result.exit_code != 0) exit_code = result.exit_code;
    print_result(
        f->measure.json, [&] { return jobs::serve_job_json(result); },
        [&](std::ostream& out) { out << "stored in " << f->measure.db << '\n'; });
  });
}

}  // namespace plumb::cli
