// plumb dist --project (dist_projection_job.h): the stored worlds read back as the model's
// points, the model fitted, checked against them and projected.
#include "plumb/jobs/dist_projection_job.h"

#include <map>
#include <utility>

#include <fmt/format.h>

#include "plumb/core/errors.h"
#include "plumb/run/shaped_link.h"
#include "plumb/run/stats.h"
#include "plumb/store/dist_record.h"
#include "plumb/store/results_store.h"
#include "plumb/workloads/all_workloads.h"

namespace plumb::jobs {
namespace {

// The stored worlds of `workload` with the newest world's setting (batch, threads, buckets,
// overlap), one per (workers, link): the newest.
std::vector<analysis::DistWorldPoint> stored_dist_points(const store::ResultsStore& db,
                                                         const std::string& workload) {
  std::vector<store::StoredDistWorld> worlds;
  for (auto& w : db.load_dist_worlds())
    if (w.workload == workload && w.status == run::RunStatus::kOk) worlds.push_back(std::move(w));
  if (worlds.empty())
    throw UsageError(fmt::format(
        "no data-parallel worlds of {} stored in {}: measure them first, e.g. plumb dist {} "
        "--workers 1,2 --link none,1gbit --db {}",
        workload, db.path(), workload, db.path()));
  const auto& newest = worlds.back();
  std::map<std::pair<int, std::string>, analysis::DistWorldPoint> points;
  for (const auto& w : worlds) {
    if (w.batch_per_worker != newest.batch_per_worker ||
        w.threads_per_worker != newest.threads_per_worker ||
        w.bucket_bytes != newest.bucket_bytes || w.overlap != newest.overlap)
      continue;
    analysis::DistWorldPoint p;
    p.workers = w.workers;
    p.link = w.link;
    p.link_bytes_per_s = w.link == "none" ? 0 : run::parse_link_rate(w.link) / 8;
    p.step_s = w.step_mean_s;
    p.compute_s = w.compute_s;
    p.exposed_s = w.exposed_s;
    p.throughput = w.throughput;
    p.backward_s = run::summarize(w.document.at("backward_s").get<std::vector<double>>()).mean;
    for (const auto& b : w.document.at("sample_buckets"))
      p.buckets.push_back({b.at("bytes").get<double>(), b.at("launched_s").get<double>(),
                           b.at("done_s").get<double>()});
    points[{w.workers, w.link}] = p;
  }
  std::vector<analysis::DistWorldPoint> out;
  for (auto& [key, p] : points) out.push_back(std::move(p));
  return out;
}

}  // namespace

DistProjectionResult project_dist(const DistProjectionOptions& o) {
  const Workload& w = workloads::default_registry().get(o.workload);
  if (o.link_gbps < 0 || o.latency_us < 0)
    throw UsageError("--link-gbps and --latency-us must be at least 0");
  const auto db = store::ResultsStore::open(o.db_path, /*read_only=*/true);
  DistProjectionResult out;
  out.workload = w.info.name;
  out.latency_s = o.latency_us * 1e-6;
  out.link_gbps = o.link_gbps;
  const auto points = stored_dist_points(*db, out.workload);
  out.model = analysis::fit_dist_model(points, out.latency_s);
  for (const auto& p : points)
    out.anchors.push_back(
        {p, analysis::project_world(out.model, p.workers, p.link_bytes_per_s, out.latency_s)});
  const double link = o.link_gbps * 1e9 / 8;
  for (int n : o.counts)
    out.projection.push_back(analysis::project_world(out.model, n, link, out.latency_s));
  return out;
}

}  // namespace plumb::jobs
