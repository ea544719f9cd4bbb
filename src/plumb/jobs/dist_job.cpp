// plumb dist's job (dist_job.h): the options checked before any worker starts, the worlds
// launched here or joined from torchrun/Slurm, each summarized and stored as it finishes.
#include "plumb/jobs/dist_job.h"

#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <utility>

#include <fmt/format.h>
#include <torch/cuda.h>

#include "plumb/core/clock.h"
#include "plumb/core/errors.h"
#include "plumb/jobs/dist_launcher.h"
#include "plumb/jobs/dist_report.h"
#include "plumb/jobs/dist_worker.h"
#include "plumb/platform/cpu_features.h"
#include "plumb/platform/environment.h"
#include "plumb/run/process_group.h"
#include "plumb/run/shaped_link.h"
#include "plumb/store/dist_record.h"
#include "plumb/store/results_store.h"
#include "plumb/workloads/all_workloads.h"

namespace plumb::jobs {
namespace {

namespace fs = std::filesystem;

// The spec every worker gets, from options refused here when they are bad (before anything
// starts, the database included); `per_worker` is set to the batch per worker.
DistSpec checked_dist_spec(const DistOptions& o, const Workload& w, int64_t& per_worker) {
  if (const std::string why = run::workload_data_parallel_refusal(w.info.name); !why.empty())
    throw UsageError(w.info.name + " cannot train data-parallel: " + why);
  DistSpec spec = o.spec;
  if (o.bucket_mb <= 0) throw UsageError("--bucket-mb must be positive");
  if (spec.threads_per_worker < 1) throw UsageError("--threads-per-worker must be at least 1");
  if (spec.steps < 2) throw UsageError("--steps must be at least 2");
  if (spec.warmup_steps < 0) throw UsageError("--warmup-steps must be at least 0");
  if (spec.timeout_s < 1) throw UsageError("--timeout must be at least 1 second");
  spec.workload = w.info.name;
  spec.bucket_bytes = static_cast<int64_t>(o.bucket_mb * 1024 * 1024);
  spec.overlap = !o.no_overlap;
  per_worker = o.batch_per_worker > 0 ? o.batch_per_worker : suite_config(w).get_int("batch");
  if (o.batch_per_worker < 0) throw UsageError("--batch-per-worker must be at least 1");
  spec.sets.push_back("batch=" + std::to_string(per_worker));
  dist_worker_config(w, spec);  // unknown keys and bad values are refused before anything starts
  return spec;
}

// Refuses local worlds this machine cannot hold: more cores than this process may use (the
// workers would time-share them and pass it off as communication), a link that is not a rate,
// GPU workers without a GPU each or over a shaped link.
void check_local_worlds(const DistSpec& spec, const std::vector<int>& counts,
                        const std::vector<std::string>& links) {
  const size_t cores = platform::allowed_cpus().size();
  for (int n : counts)
    if (static_cast<size_t>(n * spec.threads_per_worker) > cores)
      throw UsageError(fmt::format(
          "{} workers x {} thread(s) need {} cores, and this process may use {}: "
          "oversubscribed workers would time-share cores and pass it off as communication; "
          "lower --workers or --threads-per-worker",
          n, spec.threads_per_worker, n * spec.threads_per_worker, cores));
  for (const auto& l : links)
    if (l != "none") run::parse_link_rate(l);
  if (spec.device != "cuda") return;
  const int gpus = torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count()) : 0;
  if (gpus == 0)
    throw UsageError(
        "--device cuda: no CUDA GPU is visible to this plumb (or it was built against a "
        "LibTorch without CUDA)");
  if (counts.back() > gpus)
    throw UsageError(fmt::format(
        "{} workers need {} GPUs: NCCL runs one worker per GPU, and this machine shows {}",
        counts.back(), counts.back(), gpus));
  for (const auto& l : links)
    if (l != "none")
      throw UsageError(
          "--link shapes the loopback's sockets; GPU workers on one machine exchange gradients "
          "over NVLink, PCIe or shared memory, which tc cannot shape: use --link none with "
          "--device cuda");
}

// Stores one summarized world as it finishes (a later world that fails leaves it intact).
int64_t store_dist_world(store::ResultsStore& db, const DistSpec& s, const DistWorld& w,
                         const std::string& tag, const std::string& started_at) {
  const run::DataParallelResult& t = w.result.training;
  store::StoredDistWorld r;
  r.started_at = started_at;
  r.workload = s.workload;
  r.workers = t.workers;
  r.threads_per_worker = s.threads_per_worker;
  r.batch_per_worker = w.result.batch_per_worker;
  r.bucket_bytes = s.bucket_bytes;
  r.overlap = s.overlap;
  r.link = w.link_name();  // "none": the machine's own loopback; else a shaped rate
  r.tag = tag;
  r.status = t.status;
  r.message = t.message;
  r.throughput_unit = t.throughput_unit;
  r.gradient_bytes = t.gradient_bytes;
  r.peak_rss_bytes = t.peak_rss_bytes;
  const double nan = std::nan("");
  const DistWorldFigures* f = w.figures ? &*w.figures : nullptr;
  r.throughput = f ? f->throughput : nan;
  r.step_mean_s = f ? f->step.mean : nan;
  r.step_ci_rel = f ? f->step.ci_rel : nan;
  r.efficiency = f && f->efficiency ? f->efficiency->value : nan;
  r.compute_s = f ? f->compute_s : nan;
  r.exposed_s = f ? f->exposed_communication_s : nan;
  r.overlapped_s = f ? f->overlapped_communication_s : nan;
  r.environment =
      platform::capture_environment(s.threads_per_worker, s.device == "cuda" ? "cuda:0" : "cpu");
  r.document = dist_world_json(w);
  r.document["spec"] = nlohmann::json(s);
  return db.save_dist_world(r);
}

// Every world count x link on this machine, in a temporary directory of their own for rank 0's
// results; the one-worker world of each link is the base of its efficiencies.
void measure_local_worlds(DistResult& out, const DistOptions& o, int64_t per_worker,
                          store::ResultsStore& db, const std::string& started_at) {
  std::vector<int> counts = o.workers;
  std::sort(counts.begin(), counts.end());  // one worker first: the efficiencies' base
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  check_local_worlds(out.spec, counts, o.links);
  std::string dir_template = (fs::temp_directory_path() / "plumb-dist-XXXXXX").string();
  if (mkdtemp(dir_template.data()) == nullptr)
    throw run::DistError("cannot create a temporary directory for the workers' results");
  const fs::path dir = dir_template;
  try {
    for (const auto& l : o.links) {
      std::unique_ptr<run::ShapedLink> link;
      if (l != "none") link = std::make_unique<run::ShapedLink>(l);
      std::optional<DistWorld> one;  // the one-worker world, the base of the efficiencies
      for (int n : counts) {
        std::cerr << fmt::format(
            "plumb dist: {} with {} worker(s) x {} thread(s), batch {} per worker, link {} ...\n",
            out.workload, n, out.spec.threads_per_worker, per_worker, l);
        DistWorkerResult r = launch_local_world(out.spec, n, dir, link.get());
        out.worlds.push_back(summarize_dist_world(std::move(r), l, one ? &*one : nullptr));
        out.worlds.back().id = store_dist_world(db, out.spec, out.worlds.back(), o.tag, started_at);
        if (n == 1) one = out.worlds.back();
      }
    }
  } catch (...) {
    fs::remove_all(dir);
    throw;
  }
  fs::remove_all(dir);
}

}  // namespace

const std::string& DistWorld::link_name() const {
  static const std::string none = "none";
  return link ? *link : none;
}

bool DistResult::all_ok() const {
  return std::all_of(worlds.begin(), worlds.end(), [](const DistWorld& w) {
    return w.result.training.status == run::RunStatus::kOk;
  });
}

DistWorld summarize_dist_world(DistWorkerResult result, std::optional<std::string> link,
                               const DistWorld* one) {
  DistWorld out;
  out.result = std::move(result);
  out.link = std::move(link);
  const run::DataParallelResult& r = out.result.training;
  if (r.status != run::RunStatus::kOk) return out;
  DistWorldFigures& f = out.figures.emplace();
  f.step = run::summarize(r.step_s);
  const double mean_exposed = run::mean_of(r.exposed_s);
  const double mean_busy = run::mean_of(r.busy_s);
  const double bytes = static_cast<double>(r.gradient_bytes);
  // The slowest worker's step, split as each rank's own is.
  const run::RankSplit slowest{0, f.step.mean, mean_exposed, mean_busy};
  f.throughput = r.units_per_step / f.step.mean;
  f.compute_s = slowest.compute_s();
  f.exposed_communication_s = mean_exposed;
  f.overlapped_communication_s = slowest.overlapped_s();
  f.exposed_share = mean_exposed / f.step.mean;
  f.bytes_sent_per_worker_per_step = bytes * run::ring_traffic_factor(r.workers);
  if (r.workers > 1 && mean_busy > 0)
    f.step_allreduce = DistStepAllreduce{bytes / mean_busy,
                                         bytes / mean_busy * run::ring_traffic_factor(r.workers)};
  if (one != nullptr && one->figures) {
    const DistWorldFigures& base = *one->figures;
    const double rel = std::sqrt(std::pow(base.step.ci_rel, 2) + std::pow(f.step.ci_rel, 2));
    const double eff = f.throughput / (r.workers * base.throughput);
    f.efficiency = DistEfficiency{eff, eff * (1 - rel), eff * (1 + rel)};
  }
  return out;
}

std::optional<DistResult> run_dist(const DistOptions& o) {
  const Workload& w = workloads::default_registry().get(o.workload);
  DistResult out;
  out.workload = w.info.name;
  int64_t per_worker = 0;
  out.spec = checked_dist_spec(o, w, per_worker);
  std::unique_ptr<store::ResultsStore> db;  // opened before measuring: a bad --db fails fast
  const std::string started_at = utc_now_iso8601();
  const auto world = run::world_from_environment();
  if (!world || world->rank == 0) {
    db = store::ResultsStore::open(o.db_path);
    out.db_path = db->path();
  }
  if (world) {
    if (!o.workers.empty())
      throw UsageError(
          "--workers launches workers on this machine; inside a torchrun or Slurm job the "
          "job's world is used: leave --workers out");
    DistWorkerResult r = run_dist_worker(out.spec, *world);
    if (world->rank != 0) return std::nullopt;
    out.worlds.push_back(summarize_dist_world(std::move(r), std::nullopt, nullptr));
    out.worlds.back().id = store_dist_world(*db, out.spec, out.worlds.back(), o.tag, started_at);
    return out;
  }
  if (o.workers.empty())
    throw UsageError("name the worker counts, e.g. --workers 1,2 (or run inside torchrun)");
  measure_local_worlds(out, o, per_worker, *db, started_at);
  return out;
}

}  // namespace plumb::jobs
