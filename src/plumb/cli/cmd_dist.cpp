// plumb dist: data-parallel training of a workload across worker processes (TBD section E), or
// with --project the alpha-beta model of the stored worlds. The work is jobs/dist_job.h (the
// launcher and the worker protocol beside it) and jobs/dist_projection_job.h; this file
// declares the options, calls the job and prints its result: JSON (jobs/dist_report.h) or the
// tables below.
#include <iostream>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "plumb/cli/byte_size.h"
#include "plumb/cli/commands.h"
#include "plumb/cli/list_options.h"
#include "plumb/cli/table.h"
#include "plumb/core/json_text.h"
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

// One world's row; a failed world shows its status and message.
std::vector<std::string> dist_world_row(const jobs::DistWorld& w) {
  const run::DataParallelResult& t = w.result.training;
  const std::string workers = std::to_string(t.workers);
  if (!w.figures)
    return {w.link_name(),
            workers,
            run::status_name(t.status),
            t.message,
            "",
            "",
            "",
            "",
            "",
            "",
            "",
            ""};
  const jobs::DistWorldFigures& f = *w.figures;
  // GPU workers: the GPU memory LibTorch allocated, and the host's resident set beside it.
  const std::string host = format_bytes(static_cast<double>(t.peak_rss_bytes));
  const double gpu = static_cast<double>(t.peak_device_bytes);
  return {w.link_name(),
          workers,
          "ok",
          fmt::format("{} {}", format_number(f.throughput, 2), t.throughput_unit),
          f.efficiency
              ? fmt::format("{} ({}..{})", format_percent(f.efficiency->value),
                            format_percent(f.efficiency->low), format_percent(f.efficiency->high))
              : "-",
          format_seconds(f.step.mean),
          format_seconds(f.compute_s),
          fmt::format("{} ({})", format_seconds(f.exposed_communication_s),
                      format_percent(f.exposed_share)),
          format_seconds(f.overlapped_communication_s),
          format_bytes(f.bytes_sent_per_worker_per_step),
          f.step_allreduce ? format_bytes(f.step_allreduce->bus_bytes_per_s) + "/s" : "-",
          gpu > 0 ? fmt::format("{} GPU + {} host", format_bytes(gpu), host) : host};
}

// The text reporter of a measurement: one row per world, each world's all-reduce sweep, where
// it was stored.
void print_dist_result(const jobs::DistResult& r) {
  Table t({"link", "workers", "status", "throughput", "efficiency", "step", "compute",
           "exposed comm", "overlapped comm", "sent/worker/step", "allreduce busbw",
           "memory/worker"});
  for (const auto& w : r.worlds) t.add_row(dist_world_row(w));
  t.print(std::cout);
  for (const auto& w : r.worlds) {
    if (w.result.allreduce.empty()) continue;
    std::cout << fmt::format("\nall-reduce alone, {} workers (fp32, the slowest worker):\n",
                             w.result.training.workers);
    Table a({"bytes", "time", "algbw", "busbw"});
    for (const auto& s : w.result.allreduce)
      a.add_row({format_bytes(static_cast<double>(s.bytes)), format_seconds(s.seconds),
                 format_bytes(s.algorithm_bytes_per_s) + "/s",
                 format_bytes(s.bus_bytes_per_s) + "/s"});
    a.print(std::cout);
  }
  std::cout << fmt::format("stored as {} in {}\n",
                           r.worlds.size() == 1 ? "world " + std::to_string(r.worlds[0].id)
                                                : fmt::format("{} worlds", r.worlds.size()),
                           r.db_path);
}

// The text reporter of a projection: the model, its error on the measured worlds, the table.
void print_dist_projection(const jobs::DistProjectionResult& p) {
  const analysis::DistModel& m = p.model;
  std::cout << fmt::format(
      "model of {}: compute {} per step (from {}), backward {}, {} buckets; all-reduce in the "
      "step reached {}/s over the loopback (the CPU's limit here), {:.0f}% of a shaped link's "
      "rate; latency {} per ring step\n\n",
      p.workload, format_seconds(m.compute_s), m.compute_source, format_seconds(m.backward_s),
      m.launches.size(), format_bytes(m.cpu_bytes_per_s), 100 * m.link_efficiency,
      format_seconds(p.latency_s));
  Table a({"measured world", "step measured", "step modelled", "error"});
  for (const auto& x : p.anchors)
    a.add_row({fmt::format("{} workers, link {}", x.measured.workers, x.measured.link),
               format_seconds(x.measured.step_s), format_seconds(x.modelled.step_s),
               format_percent(x.step_error())});
  a.print(std::cout);
  std::cout << "\nprojection (a model, not a measurement):\n";
  Table t({"workers", "link", "all-reduce bw", "communication", "exposed", "step", "throughput",
           "efficiency"});
  for (const auto& q : p.projection)
    t.add_row({std::to_string(q.workers), fmt::format("{} Gbit/s", p.link_gbps),
               format_bytes(q.beta_bytes_per_s) + "/s" + (q.cpu_bound ? " (CPU)" : ""),
               format_seconds(q.communication_s), format_seconds(q.exposed_s),
               format_seconds(q.step_s), format_number(q.throughput, 2),
               format_percent(q.efficiency)});
  t.print(std::cout);
}

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
    if (line.as_json)
      std::cout << json_text(jobs::dist_projection_json(p), 2) << '\n';
    else
      print_dist_projection(p);
    return;
  }
  jobs::DistOptions o = line.measure;
  if (!line.workers.empty()) o.workers = parse_positive_int_list("--workers", line.workers);
  o.links = split(line.links, ',');
  const auto r = jobs::run_dist(o);
  if (!r) return;  // a worker of a torchrun or Slurm world other than rank 0: rank 0 reports
  if (!r->all_ok()) exit_code = 1;
  if (line.as_json)
    std::cout << json_text(jobs::dist_result_json(*r), 2) << '\n';
  else
    print_dist_result(*r);
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
