// plumb dist as a job: data-parallel training of a workload across worker processes, one world
// per worker count (and link) launched on this machine, or the one world of a torchrun or Slurm
// job that this process is a worker of. Per world: throughput, scaling efficiency against one
// worker, the step split into compute, communication it waited for (exposed) and communication
// hidden under backward (overlapped), the gradient bytes every worker sends, the bandwidth the
// all-reduces reached, the memory per worker; optionally the all-reduce sweep. Every world is
// stored as it finishes. The reporters are in dist_report.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "plumb/jobs/dist_protocol.h"
#include "plumb/run/stats.h"

namespace plumb::jobs {

struct DistOptions {
  std::string workload;
  // device, threads_per_worker, steps, warmup_steps, timeout_s, seed, allreduce_sweep and the
  // config settings; the job fills in workload, bucket_bytes, overlap and the batch.
  DistSpec spec;
  // Worker counts to launch on this machine; empty: this process is a worker of a torchrun or
  // Slurm world (the environment says which), or nothing was asked for (refused).
  std::vector<int> workers;
  int64_t batch_per_worker = 0;  // 0: the batch plumb suite uses
  double bucket_mb = 25;
  bool no_overlap = false;
  std::vector<std::string> links = {"none"};  // "none" or a rate such as "1gbit", per world
  std::string db_path = "plumb.db";
  std::string tag;
};

struct DistEfficiency {
  double value = 0, low = 0, high = 0;  // throughput / (workers x one worker's), its interval
};

// The all-reduces inside the step: gradient bytes over the time any was in flight.
struct DistStepAllreduce {
  double algorithm_bytes_per_s = 0, bus_bytes_per_s = 0;
};

// The figures of a world whose workers finished (status ok).
struct DistWorldFigures {
  run::Summary step;  // of the measured steps
  double throughput = 0;
  double compute_s = 0, exposed_communication_s = 0, overlapped_communication_s = 0;
  double exposed_share = 0;  // of the step
  double bytes_sent_per_worker_per_step = 0;
  std::optional<DistStepAllreduce> step_allreduce;  // 2 or more workers with all-reduces
  std::optional<DistEfficiency> efficiency;         // a one-worker world on the same link ran
};

struct DistWorld {
  DistWorkerResult result;          // rank 0's, as the workers measured it
  std::optional<std::string> link;  // a local launch's link; a torchrun or Slurm world has none
  std::optional<DistWorldFigures> figures;  // status ok
  int64_t id = 0;                           // in the store

  const std::string& link_name() const;  // "none" without a link
};

struct DistResult {
  std::string workload;
  DistSpec spec;  // complete, as the workers got it
  std::vector<DistWorld> worlds;
  std::string db_path;

  bool all_ok() const;
};

// Measures and stores the worlds. nullopt on a worker of a torchrun or Slurm world other than
// rank 0 (rank 0 reports). Throws UsageError for bad options before any worker starts,
// run::DistError when a world fails (its workers stopped, nothing of it stored).
std::optional<DistResult> run_dist(const DistOptions& options);

// One world's figures from rank 0's result; `one` is the one-worker world on the same link
// (the base of the efficiency), or null.
DistWorld summarize_dist_world(DistWorkerResult result, std::optional<std::string> link,
                               const DistWorld* one);

}  // namespace plumb::jobs
