// plumb serve: a workload's inference behind an open-loop load generator and a dynamic batcher,
// in MLPerf LoadGen's scenarios (run/serve_session.h); a generative workload's requests served
// token by token by a static or continuous batcher under TTFT and TPOT bounds
// (run/token_serve_session.h). Server without --qps finds the largest
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

#include "plumb/cli/byte_size.h"
#include "plumb/cli/commands.h"
#include "plumb/cli/config_options.h"
#include "plumb/cli/duration_text.h"
#include "plumb/cli/job_command.h"
#include "plumb/cli/measure_options.h"
#include "plumb/core/errors.h"
#include "plumb/core/text.h"
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
  // Token-level serving (a generative workload).
  std::string scheduler = "continuous";
  int64_t chunk = 0;
  std::string kv_budget, prompt_tokens, output_tokens, lengths;
  double burstiness = 1;
  std::string ttft, tpot;
  double percentile = 0;  // 0: the default (99)
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
  cmd.add_option("--scheduler", f.scheduler,
                 "Generative workloads: static (a batch runs to its longest request) or continuous "
                 "(requests join and leave after every decode iteration); a list "
                 "(static,continuous) serves one session each")
      ->capture_default_str();
  cmd.add_option("--chunk", f.chunk,
                 "Continuous: tokens per iteration (decodes plus prompt chunks); 0 = whole prompts "
                 "first")
      ->capture_default_str();
  cmd.add_option("--kv-budget", f.kv_budget,
                 "KV-cache bytes the running requests may reserve, e.g. 512MiB (default: every "
                 "slot's allocation)");
  cmd.add_option("--prompt-tokens", f.prompt_tokens, "Prompt tokens per request: 128 or 16-128");
  cmd.add_option("--output-tokens", f.output_tokens, "Output tokens per request: 64 or 16-64");
  cmd.add_option("--lengths", f.lengths,
                 "File of 'prompt_tokens,output_tokens' lines to draw requests from");
  cmd.add_option("--burstiness", f.burstiness,
                 "Gamma arrivals' shape: 1 = Poisson, below 1 burstier")
      ->capture_default_str();
  cmd.add_option("--ttft", f.ttft, "Generative: time-to-first-token bound, e.g. 2s");
  cmd.add_option("--tpot", f.tpot, "Generative: time-per-output-token bound, e.g. 200ms");
  cmd.add_option("--percentile", f.percentile,
                 "Generative: the percentile both bounds hold at (default 99)");
  add_config_options(cmd, f.overrides);
  add_measure_options(cmd, f.measure, 60, 60, SamplingOptions::kWithout);
  return given;
}

// The options that belong to one kind of workload only, given for the other: a usage error.
void refuse_other_kinds_flags(const Workload& w, const ServeFlags& f, bool token_level) {
  const std::vector<std::pair<bool, const char*>> token_flags = {
      {!f.kv_budget.empty(), "--kv-budget"},
      {!f.prompt_tokens.empty(), "--prompt-tokens"},
      {!f.output_tokens.empty(), "--output-tokens"},
      {!f.lengths.empty(), "--lengths"},
      {!f.ttft.empty(), "--ttft"},
      {!f.tpot.empty(), "--tpot"},
      {f.percentile != 0, "--percentile"},
      {f.chunk != 0, "--chunk"},
      {f.burstiness != 1, "--burstiness"},
      {f.scheduler != "continuous", "--scheduler"}};
  const std::vector<std::pair<bool, const char*>> query_flags = {{!f.p90.empty(), "--p90"},
                                                                 {!f.p99.empty(), "--p99"},
                                                                 {!f.p999.empty(), "--p999"},
                                                                 {f.workers != 1, "--workers"}};
  for (const auto& [given, flag] : token_level ? query_flags : token_flags) {
    if (!given) continue;
    throw UsageError(
        token_level
            ? fmt::format("{} does not apply to {}, a generative workload served token by token: "
                          "give --ttft, --tpot and --percentile (one engine serves it; --threads "
                          "sets its cores)",
                          flag, w.info.name)
            : fmt::format("{} applies to generative workloads (gpt2, llama, paradnn_transformer) "
                          "served token by token, not to {}",
                          flag, w.info.name));
  }
}

// The token-level options the flags ask for, from the workload's defaults.
void apply_token_flags(const ServeFlags& f, const ServeGiven& given, jobs::ServeJob& job) {
  const run::TokenServeDefaults& d = job.token_defaults;
  run::TokenServeOptions& t = job.token;
  t.scenario = run::parse_scenario(f.scenario);
  t.rate = f.qps;
  t.burstiness = f.burstiness;
  for (const auto& name : split(f.scheduler, ','))
    job.schedulers.push_back(run::parse_scheduler(name));
  t.scheduler.kind = job.schedulers.front();
  t.scheduler.max_batch = given.max_batch->count() > 0 ? f.max_batch : d.max_batch;
  t.scheduler.chunk_tokens = f.chunk;
  t.scheduler.max_wait_s = f.max_wait.empty() ? 0 : parse_duration_s("--max-wait", f.max_wait);
  t.scheduler.kv_budget_bytes =
      f.kv_budget.empty() ? 0 : parse_byte_size("--kv-budget", f.kv_budget);
  if (!f.lengths.empty()) {
    if (!f.prompt_tokens.empty() || !f.output_tokens.empty())
      throw UsageError("--lengths gives both lengths; drop --prompt-tokens and --output-tokens");
    t.mix.pairs = run::read_length_file(f.lengths);
    t.mix.file = f.lengths;
  } else {
    t.mix.prompt = run::parse_length_range(
        "--prompt-tokens", f.prompt_tokens.empty() ? d.prompt_tokens : f.prompt_tokens);
    t.mix.output = run::parse_length_range(
        "--output-tokens", f.output_tokens.empty() ? d.output_tokens : f.output_tokens);
  }
  t.ttft_given = !f.ttft.empty();
  t.tpot_given = !f.tpot.empty();
  t.bounds.ttft_s = t.ttft_given ? parse_duration_s("--ttft", f.ttft) : d.ttft_s;
  t.bounds.tpot_s = t.tpot_given ? parse_duration_s("--tpot", f.tpot) : d.tpot_s;
  t.bounds.percentile = f.percentile != 0 ? f.percentile / 100 : d.percentile;
  t.duration_s = f.duration_s;
  t.resolution = f.resolution;
}

// The job the flags ask for; throws UsageError for a rate, bound or setting out of range.
jobs::ServeJob serve_job_from(const Workload& w, const ServeFlags& f, const ServeGiven& given) {
  jobs::ServeJob job;
  job.defaults = run::serve_defaults(w.info);
  const Config config = resolve_config(w, f.overrides);
  job.token_level = generates_tokens(w, config);
  refuse_other_kinds_flags(w, f, job.token_level);
  if (given.qps->count() > 0 && !(f.qps > 0 && std::isfinite(f.qps)))
    throw UsageError(fmt::format(
        "--qps must be a positive number of {} per second, got {}; leave it out to search for "
        "the largest rate that keeps the bound",
        job.token_level ? "requests" : "queries", f.qps));
  if (given.qps->count() > 0 && f.scenario != "server")
    throw UsageError(
        "--qps sets the Server scenario's arrival rate; drop it or use --scenario server");
  job.settings = make_options(w, config, Mode::kInfer, f.measure);
  if (job.token_level) {
    apply_token_flags(f, given, job);
    for (const auto& o : job.settings)
      for (const run::SchedulerKind kind : job.schedulers) {
        const run::TokenServeOptions session = jobs::token_session_options(job, o, kind);
        run::validate_token_serve_options(session);
        run::check_requests_fit(w, session);
      }
    return storing_per(std::move(job), f.measure);
  }
  run::ServeOptions& base = job.base;
  base.scenario = run::parse_scenario(f.scenario);
  apply_bound(f, job.defaults, base);
  base.rate_qps = f.qps;
  base.policy.max_batch = given.max_batch->count() > 0 ? f.max_batch : job.defaults.max_batch;
  // The wait follows the bound in force, the user's or the default.
  base.policy.max_wait_s = f.max_wait.empty() ? run::default_max_wait_s(base.bound_s)
                                              : parse_duration_s("--max-wait", f.max_wait);
  base.workers = f.workers;
  base.duration_s = f.duration_s;
  base.resolution = f.resolution;
  for (const auto& o : job.settings) {
    run::ServeOptions checked = base;
    checked.run = o;
    run::validate_serve_options(checked);
  }
  return storing_per(std::move(job), f.measure);
}

// The defaults in force, printed before the run (each overridable).
std::string serve_defaults_line(const Workload& w, const jobs::ServeJob& job) {
  if (job.token_level) {
    const run::TokenServeDefaults& d = job.token_defaults;
    return fmt::format(
        "serving defaults for {} (generative): p{:g} TTFT <= {:g} s and TPOT <= {:g} ms, max "
        "batch {}, prompts {} and outputs {} tokens — {}",
        w.info.name, 100 * d.percentile, d.ttft_s, 1e3 * d.tpot_s, d.max_batch, d.prompt_tokens,
        d.output_tokens, d.source);
  }
  const run::ServeDefaults& d = job.defaults;
  return fmt::format(
      "serving defaults for {} ({}): p{:g} <= {:g} ms, max batch {}, max wait {:g} ms — {}",
      w.info.name, w.info.domain, 100 * d.percentile, 1e3 * d.bound_s, d.max_batch,
      1e3 * d.max_wait_s, d.source);
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
    std::cerr << serve_defaults_line(w, job) << '\n';
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
