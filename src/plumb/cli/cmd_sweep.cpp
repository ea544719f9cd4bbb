// plumb sweep: run a workload over a grid of hyperparameters (ParaDnn Sec. 2; TBD Fig. 4),
// every point with the runner's steady-state sampling, stored as it finishes so a rerun of
// the same sweep skips what is done; --shard splits the points across processes or machines
// and plumb merge combines their databases.
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "plumb/analysis/profile_roofline.h"
#include "plumb/analysis/sweep_point_metrics.h"
#include "plumb/cli/commands.h"
#include "plumb/cli/list_options.h"
#include "plumb/cli/table.h"
#include "plumb/core/errors.h"
#include "plumb/core/json_number.h"
#include "plumb/core/json_text.h"
#include "plumb/core/kill_point.h"
#include "plumb/jobs/stored_or_fresh_probe.h"
#include "plumb/platform/environment.h"
#include "plumb/profile/sweep_point.h"
#include "plumb/run/runner.h"
#include "plumb/run/step_loop.h"
#include "plumb/run/sweep_spec.h"
#include "plumb/store/results_store.h"
#include "plumb/workloads/all_workloads.h"

namespace plumb::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct SweepFlags {
  std::string target;  // spec file, or workload name with --grid
  std::vector<std::string> grid, sets;
  std::string modes, dtypes, measure, shard, db = "plumb.db", tag, name;
  int threads = 0;  // 0: the spec's
  bool no_probe = false, json = false;
  double max_time = 0, max_warmup_time = 0;  // 0: the spec's
};

bool looks_like_file(const std::string& target) {
  for (const char* ext : {".yaml", ".yml", ".json"})
    if (target.size() > std::string(ext).size() &&
        target.compare(target.size() - std::string(ext).size(), std::string::npos, ext) == 0)
      return true;
  return target.find('/') != std::string::npos;
}

run::SweepSpec spec_from_flags(const SweepFlags& f) {
  run::SweepSpec s;
  if (looks_like_file(f.target)) {
    if (!f.grid.empty())
      throw UsageError("give either a spec file or a workload with --grid, not both");
    s = run::load_sweep_spec(f.target);
    if (!f.sets.empty()) s.sets.insert(s.sets.end(), f.sets.begin(), f.sets.end());
  } else {
    workloads::default_registry().get(f.target);  // unknown names: the registry's message
    if (f.grid.empty())
      throw UsageError(fmt::format(
          "'{}' is a workload, so the sweep needs --grid key=v1,v2,... (or pass a spec file "
          "ending in .yaml, .yml or .json)",
          f.target));
    s = run::sweep_spec_from_grid(f.target, f.grid, f.sets);
  }
  if (!f.name.empty()) s.name = f.name;
  if (!f.modes.empty()) {
    s.modes.clear();
    for (const auto& m : parse_name_list("--mode", f.modes)) s.modes.push_back(parse_mode(m));
  }
  if (!f.dtypes.empty()) s.dtypes = parse_dtype_list(f.dtypes);
  if (!f.measure.empty()) {
    s.measure_memory = false;
    s.measure_profile = false;
    for (const auto& m : parse_name_list("--measure", f.measure)) {
      if (m == "memory") {
        s.measure_memory = true;
      } else if (m == "profile") {
        s.measure_profile = true;
      } else if (m != "throughput") {
        throw UsageError(
            fmt::format("unknown --measure '{}'; valid: throughput, memory, profile", m));
      }
    }
  }
  if (f.threads > 0) s.threads = f.threads;
  if (f.max_time > 0) s.budget.max_time_s = f.max_time;
  if (f.max_warmup_time > 0) s.budget.max_warmup_s = f.max_warmup_time;
  return s;
}

void run_sweep_command(const SweepFlags& f, int& exit_code) {
  run::SweepSpec spec = spec_from_flags(f);
  const Workload& w = workloads::default_registry().get(spec.workload);
  run::validate_sweep_spec(spec, w);
  const run::Shard shard =
      f.shard.empty() ? run::shard_from_environment() : run::parse_shard(f.shard);
  const auto points = run::expand(spec);
  auto db = store::ResultsStore::open(f.db);
  const int64_t sweep_id = db->register_sweep(spec.name, spec.workload, run::sweep_key(spec),
                                              static_cast<int64_t>(points.size()));
  std::set<std::string> done;
  for (const auto& p : db->load_sweep_points(sweep_id)) done.insert(p.key);

  std::optional<analysis::Ceilings> ceilings;
  if (!f.no_probe) {
    jobs::ProbeRequest request;
    request.max_threads = spec.threads;
    const jobs::ProbeChoice probe = jobs::current_probe(*db, request);
    ceilings = analysis::ceilings_from_probe(probe.probe.document, "fp32", spec.threads,
                                             analysis::PeakKind::kInstruction);
  }

  std::vector<const run::SweepPoint*> todo;
  size_t mine = 0;
  for (const auto& p : points) {
    if (static_cast<int>(p.index % static_cast<size_t>(shard.count)) != shard.index) continue;
    ++mine;
    if (done.count(p.key) == 0) todo.push_back(&p);
  }
  std::cerr << fmt::format(
      "sweep '{}' ({}): {} points{}; {} already stored, {} to run\n", spec.name, spec.workload,
      points.size(),
      shard.count > 1 ? fmt::format(", shard {}/{} has {}", shard.index, shard.count, mine) : "",
      mine - todo.size(), todo.size());

  const auto start = Clock::now();
  double warmup_total = 0, measure_total = 0;
  int failures = 0;
  std::vector<store::SweepPointRecord> finished;
  for (size_t i = 0; i < todo.size(); ++i) {
    const run::SweepPoint& p = *todo[i];
    kill_point("sweep-point");
    const auto env = platform::capture_environment(spec.threads, run::RunOptions{}.device);
    const profile::SweepPointMeasurement point = profile::measure_sweep_point(w, spec, p);
    const analysis::SweepPointStatus outcome =
        analysis::sweep_point_status(point, spec.budget.point_time_limit_s);
    store::SweepPointRecord rec;
    rec.sweep_id = sweep_id;
    rec.index = static_cast<int64_t>(p.index);
    rec.key = p.key;
    rec.mode = mode_name(p.mode);
    rec.params = run::point_params(spec, p);
    rec.status = outcome.status;
    rec.message = outcome.message;
    rec.shard = fmt::format("{}/{}", shard.index, shard.count);
    for (double s : point.run.warmup_s) rec.warmup_s += s;
    for (double s : point.run.samples_s) rec.measure_s += s;
    rec.metrics = analysis::sweep_point_metrics(point, ceilings);
    const nlohmann::ordered_json& m = rec.metrics;
    rec.wall_s = point.wall_s;
    rec.finished_at = utc_now_iso8601();
    db->save_sweep_point(rec, point.options, point.run, point.memory ? &*point.memory : nullptr,
                         point.ops ? &*point.ops : nullptr, env, f.tag);
    warmup_total += rec.warmup_s;
    measure_total += rec.measure_s;
    if (rec.status != "ok") ++failures;
    const double elapsed = seconds_since(start);
    std::cerr << fmt::format(
        "[{}/{}] {}: {} | failures {}, elapsed {}, ETA {}\n", i + 1, todo.size(), p.key,
        rec.status == "ok"
            ? fmt::format("{:.1f} examples/s, {:.2f} GFLOP/s", m.at("examples_per_s").get<double>(),
                          m.at("flops_per_s").get<double>() / 1e9)
            : rec.status + ": " + rec.message,
        failures, format_duration(elapsed),
        format_duration(elapsed / static_cast<double>(i + 1) *
                        static_cast<double>(todo.size() - i - 1)));
    finished.push_back(rec);
  }
  const double total = seconds_since(start);
  if (failures > 0) exit_code = 1;
  if (f.json) {
    nlohmann::ordered_json out;
    out["sweep"] = spec.name;
    out["workload"] = spec.workload;
    out["points"] = points.size();
    out["shard"] = fmt::format("{}/{}", shard.index, shard.count);
    out["skipped"] = mine - todo.size();
    out["ran"] = todo.size();
    out["failures"] = failures;
    out["seconds"] = total;
    out["warmup_seconds"] = warmup_total;
    out["measure_seconds"] = measure_total;
    out["finished"] = nlohmann::ordered_json::array();
    for (const auto& r : finished)
      out["finished"].push_back(
          {{"key", r.key}, {"status", r.status}, {"params", r.params}, {"metrics", r.metrics}});
    std::cout << json_text(out, 2) << '\n';
    return;
  }
  std::cout << fmt::format(
      "sweep '{}': ran {} point(s) in {} ({} warm-up, {} measurement, {} building, costing and "
      "storing), {} failed; {} were already stored. Stored in {}\n",
      spec.name, todo.size(), format_seconds(total), format_seconds(warmup_total),
      format_seconds(measure_total), format_seconds(total - warmup_total - measure_total), failures,
      mine - todo.size(), db->path());
}

}  // namespace

void add_sweep_commands(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "sweep", "Run a workload over a grid of hyperparameters (resumable, shardable)");
  auto f = std::make_shared<SweepFlags>();
  cmd->add_option("spec", f->target,
                  "A sweep spec (.yaml/.yml/.json), or a workload name with --grid")
      ->required();
  cmd->add_option("--grid", f->grid, "key=v1,v2,... (repeatable): a list-valued config key")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--set", f->sets, "key=value for a config key kept fixed (repeatable)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--mode", f->modes, "train, infer or train,infer (default: the spec's)");
  cmd->add_option("--dtype", f->dtypes,
                  "Precisions, e.g. fp32,bf16,int8: an axis of the sweep (default: the spec's, "
                  "else fp32)");
  cmd->add_option("--measure", f->measure,
                  "throughput, memory, profile (comma list; default: the spec's)");
  cmd->add_option("--threads", f->threads, "Intra-op threads (default: the spec's, else 1)");
  cmd->add_option("--max-time", f->max_time, "Measurement budget per point, seconds");
  cmd->add_option("--max-warmup-time", f->max_warmup_time, "Warm-up cap per point, seconds");
  cmd->add_option("--shard", f->shard,
                  "i/n: run only the points whose index % n == i (default: PLUMB_SHARD, "
                  "Slurm or SGE array variables, else all)");
  cmd->add_option("--name", f->name, "The sweep's name in the database (default: the spec's)");
  cmd->add_flag("--no-probe", f->no_probe,
                "Do not measure the machine's peak when none is stored (no flops_util)");
  cmd->add_option("--db", f->db, "Results database (SQLite)")->capture_default_str();
  cmd->add_option("--tag", f->tag, "Label stored with the runs");
  cmd->add_flag("--json", f->json, "Print one JSON document on stdout");
  cmd->callback([f, &exit_code] { run_sweep_command(*f, exit_code); });

  auto* merge =
      app.add_subcommand("merge", "Combine the sweeps of shard databases into one database");
  auto out = std::make_shared<std::string>();
  auto inputs = std::make_shared<std::vector<std::string>>();
  merge->add_option("--db", *out, "The database to merge into (created if missing)")->required();
  merge->add_option("inputs", *inputs, "Shard databases to merge in")->required();
  merge->callback([out, inputs] {
    for (const auto& in : *inputs)
      if (std::filesystem::exists(in) && std::filesystem::exists(*out) &&
          std::filesystem::equivalent(in, *out))
        throw UsageError(fmt::format("cannot merge '{}' into itself", in));
    auto db = store::ResultsStore::open(*out);
    for (const auto& in : *inputs) {
      const auto report = db->merge_from(in);
      std::cout << fmt::format("{}: {} sweep(s) added, {} point(s) added, {} already present\n", in,
                               report.sweeps_added, report.points_added,
                               report.points_already_present);
    }
  });
}

}  // namespace plumb::cli
