// plumb sweep: run a workload over a grid of hyperparameters (ParaDnn Sec. 2; TBD Fig. 4),
// every point with the runner's steady-state sampling, stored as it finishes so a rerun of
// the same sweep skips what is done (jobs/sweep_job); --shard splits the points across processes
// or machines and plumb merge combines their databases.
#include <filesystem>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "plumb/cli/commands.h"
#include "plumb/cli/job_command.h"
#include "plumb/cli/list_options.h"
#include "plumb/core/errors.h"
#include "plumb/core/mode.h"
#include "plumb/core/precision.h"
#include "plumb/jobs/sweep_job.h"
#include "plumb/jobs/sweep_report.h"
#include "plumb/run/sweep_spec.h"
#include "plumb/store/results_store.h"
#include "plumb/store/sweep_records.h"
#include "plumb/workloads/all_workloads.h"

namespace plumb::cli {
namespace {

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
  jobs::SweepJobOptions job;
  job.spec = spec_from_flags(f);
  const Workload& w = workloads::default_registry().get(job.spec.workload);
  run::validate_sweep_spec(job.spec, w);
  job.shard = f.shard.empty() ? run::shard_from_environment() : run::parse_shard(f.shard);
  job.probe = !f.no_probe;
  job.db = f.db;
  job.tag = f.tag;
  const jobs::SweepJobResult result = jobs::run_sweep_job(w, job, print_progress);
  if (result.failures > 0) exit_code = 1;
  print_result(
      f.json, [&] { return jobs::sweep_job_json(result); },
      [&](std::ostream& out) { jobs::print_sweep(out, result); });
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
