// plumb dist: data-parallel training of a workload across worker processes (TBD section E), or
// with --project the alpha-beta model of the stored worlds. The work is jobs/dist_job.h (the
// launcher and the worker protocol beside it) and jobs/dist_projection_job.h; this file
// declares the options, calls the job and prints its result with jobs/dist_report.h.
#include <memory>
#include <ostream>
#include <string>

#include "plumb/cli/commands.h"
#include "plumb/cli/job_command.h"
#include "plumb/cli/list_options.h"
#include "plumb/core/text.h"
#include "plumb/jobs/dist_job.h"
#include "plumb/jobs/dist_projection_job.h"
#include "plumb/jobs/dist_report.h"
#include "plumb/jobs/dist_worker.h"

namespace plumb::cli {
namespace {

// What the command line fills: the job's options, and the lists and switches it parses.
struct DistCommandLine {
  jobs::DistOptions measure;
  std::string workers, links = "none", project;
  double link_gbps = 0, latency_us = 0;
  bool as_json = false;
};

// The options of the worlds, in --help's order: which, where, over which link; and the
// projection's.
void declare_dist_world_options(CLI::App& cmd, DistCommandLine& o) {
  cmd.add_option("workload", o.measure.workload, "Workload name (see plumb list)")->required();
  cmd.add_option("--workers", o.workers,
                 "Worker counts to launch on this machine, e.g. 1,2 (omit inside a torchrun or "
                 "Slurm job: the job's world is used)");
  cmd.add_option("--device", o.measure.spec.device,
                 "cpu: workers on cores of their own, over Gloo; cuda: one GPU per worker (its "
                 "local rank), over NCCL")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  cmd.add_option("--threads-per-worker", o.measure.spec.threads_per_worker,
                 "Intra-op threads of each worker, each on cores of its own")
      ->capture_default_str();
  cmd.add_option("--batch-per-worker", o.measure.batch_per_worker,
                 "Examples per worker and step (default: the batch plumb suite uses)");
  cmd.add_option("--bucket-mb", o.measure.bucket_mb, "Gradient bucket size, MiB")
      ->capture_default_str();
  cmd.add_flag("--no-overlap", o.measure.no_overlap,
               "All-reduce every bucket after backward ends (no overlap with backward)");
  cmd.add_option("--link", o.links,
                 "Links to measure over, e.g. none,1gbit,10gbit: a rate runs the workers in a "
                 "network namespace of plumb's own whose loopback tc shapes to it (root only)")
      ->capture_default_str();
  cmd.add_option("--project", o.project,
                 "Instead of measuring: project the stored worlds of the workload to these "
                 "worker counts, e.g. 8,64,512 (an alpha-beta model of ring all-reduce)");
  cmd.add_option("--link-gbps", o.link_gbps,
                 "The projected link's rate in Gbit/s (default: this machine's loopback)");
  cmd.add_option("--latency-us", o.latency_us,
                 "The projected link's latency per ring step, microseconds")
      ->capture_default_str();
}

// The options of the training and of the output, in --help's order.
void declare_dist_run_options(CLI::App& cmd, DistCommandLine& o) {
  jobs::DistSpec& spec = o.measure.spec;
  cmd.add_option("--steps", spec.steps, "Measured steps per worker count")->capture_default_str();
  cmd.add_option("--warmup-steps", spec.warmup_steps, "Steps before measuring")
      ->capture_default_str();
  cmd.add_flag("--allreduce-sweep", spec.allreduce_sweep,
               "Also time all-reduce alone from 1 KiB to 256 MiB (nccl-tests' algbw and busbw), "
               "in worlds of 2 or more workers");
  cmd.add_option("--timeout", spec.timeout_s,
                 "Seconds a worker waits for the rendezvous or a peer before giving up")
      ->capture_default_str();
  cmd.add_option("--seed", spec.seed, "Seed for weights and synthetic data")->capture_default_str();
  cmd.add_option("--set", spec.sets, "Override a config key: --set key=value (repeatable)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd.add_option("--db", o.measure.db_path, "Results database (SQLite)")->capture_default_str();
  cmd.add_option("--tag", o.measure.tag, "Label stored with the results");
  cmd.add_flag("--json", o.as_json, "Print one JSON document on stdout");
}

void run_dist_command(const DistCommandLine& line, int& exit_code) {
  if (!line.project.empty()) {
    jobs::DistProjectionOptions o;
    o.workload = line.measure.workload;
    o.counts = parse_positive_int_list("--project", line.project);
    o.link_gbps = line.link_gbps;
    o.latency_us = line.latency_us;
    o.db_path = line.measure.db_path;
    const auto p = jobs::project_dist(o);
    print_result(
        line.as_json, [&] { return jobs::dist_projection_json(p); },
        [&](std::ostream& out) { jobs::print_dist_projection(out, p); });
    return;
  }
  jobs::DistOptions o = line.measure;
  if (!line.workers.empty()) o.workers = parse_positive_int_list("--workers", line.workers);
  o.links = split(line.links, ',');
  const auto r = jobs::run_dist(o);
  if (!r) return;  // a worker of a torchrun or Slurm world other than rank 0: rank 0 reports
  if (!r->all_ok()) exit_code = 1;
  print_result(
      line.as_json, [&] { return jobs::dist_result_json(*r); },
      [&](std::ostream& out) { jobs::print_dist_result(out, *r); });
}

}  // namespace

void add_dist_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "dist",
      "Data-parallel training across worker processes: throughput and scaling efficiency, the "
      "step split into compute and exposed / overlapped communication, all-reduce bandwidth");
  auto line = std::make_shared<DistCommandLine>();
  declare_dist_world_options(*cmd, *line);
  declare_dist_run_options(*cmd, *line);
  cmd->callback([line, &exit_code] { run_dist_command(*line, exit_code); });
  // The worker side of a local launch (hidden): everything comes from the environment.
  app.add_subcommand("_dist-worker", "")
      ->group("")
      ->callback(jobs::run_dist_worker_from_environment);
}

}  // namespace plumb::cli
