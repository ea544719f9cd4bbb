// The alpha-beta model of a data-parallel step (see dist_projection.h).
#include "plumb/analysis/dist_projection.h"

#include <algorithm>
#include <limits>

#include "plumb/core/errors.h"

namespace plumb::analysis {
namespace {

double ring_factor(int workers) {
  return workers > 1 ? 2.0 * (workers - 1) / workers : 0.0;
}

// When backward's last gradient has been averaged: buckets launched as measured, all-reduced
// one after another by one communication thread.
double last_done_s(const std::vector<BucketTimes>& launches, int workers, double alpha_s,
                   double beta) {
  double done = 0;
  for (const auto& b : launches)
    done = std::max(b.launched_s, done) + ring_allreduce_seconds(b.bytes, workers, alpha_s, beta);
  return done;
}

}  // namespace

double ring_allreduce_seconds(double bytes, int workers, double alpha_s, double beta) {
  if (workers <= 1) return 0;
  return 2.0 * (workers - 1) * alpha_s + bytes * ring_factor(workers) / beta;
}

double fit_step_bandwidth(const DistWorldPoint& w, double alpha_s) {
  if (w.workers <= 1 || w.buckets.empty()) return 0;
  // Gloo may run two buckets at once (two communication threads, as PyTorch's default), so
  // the buckets' own durations overlap: the bandwidth is what all of them moved over the time
  // any of them was in flight, less the latency of their ring steps.
  std::vector<BucketTimes> buckets = w.buckets;
  std::sort(buckets.begin(), buckets.end(),
            [](const BucketTimes& a, const BucketTimes& b) { return a.launched_s < b.launched_s; });
  double moved = 0, busy = 0, open = 0, close = -1;
  for (const auto& b : buckets) {
    moved += b.bytes * ring_factor(w.workers);
    if (b.launched_s > close) {
      busy += std::max(0.0, close - open);
      open = b.launched_s;
    }
    close = std::max(close, b.done_s);
  }
  busy += std::max(0.0, close - open);
  busy -= static_cast<double>(buckets.size()) * 2.0 * (w.workers - 1) * alpha_s;
  return busy > 0 ? moved / busy : 0;
}

DistModel fit_dist_model(const std::vector<DistWorldPoint>& worlds, double alpha_s) {
  const DistWorldPoint* one = nullptr;
  const DistWorldPoint* loopback = nullptr;  // the largest unshaped multi-worker world
  const DistWorldPoint* shaped = nullptr;    // the largest shaped multi-worker world
  for (const auto& w : worlds) {
    if (w.workers == 1 && (one == nullptr || w.link == "none")) one = &w;
    if (w.workers > 1 && w.link_bytes_per_s <= 0 &&
        (loopback == nullptr || w.workers > loopback->workers))
      loopback = &w;
    if (w.workers > 1 && w.link_bytes_per_s > 0 &&
        (shaped == nullptr || w.workers > shaped->workers))
      shaped = &w;
  }
  if (one == nullptr || one->buckets.empty())
    throw UsageError(
        "a projection needs a one-worker world of the same setting: plumb dist W --workers 1,2");
  if (loopback == nullptr && shaped == nullptr)
    throw UsageError(
        "a projection needs a world of two or more workers to fit the communication to: plumb "
        "dist W --workers 1,2");
  DistModel m;
  m.launches = one->buckets;
  m.backward_s = one->backward_s;
  m.units_per_step = one->throughput * one->step_s;
  m.one_worker_throughput = one->throughput;
  // Compute beside communication: the unshaped world's when there is one (its communication
  // runs the whole backward long, as it would on a fast link).
  const DistWorldPoint* compute = loopback != nullptr ? loopback : shaped;
  m.compute_s = compute->compute_s;
  m.compute_source = std::to_string(compute->workers) + " workers, link " + compute->link;
  if (loopback != nullptr) m.cpu_bytes_per_s = fit_step_bandwidth(*loopback, alpha_s);
  if (shaped != nullptr)
    m.link_efficiency = fit_step_bandwidth(*shaped, alpha_s) / shaped->link_bytes_per_s;
  return m;
}

DistProjection project_world(const DistModel& m, int workers, double link_bytes_per_s,
                             double alpha_s) {
  DistProjection p;
  p.workers = workers;
  p.link_bytes_per_s = link_bytes_per_s;
  double beta = std::numeric_limits<double>::infinity();
  if (link_bytes_per_s > 0) beta = m.link_efficiency * link_bytes_per_s;
  if (m.cpu_bytes_per_s > 0 && m.cpu_bytes_per_s < beta) {
    beta = m.cpu_bytes_per_s;
    p.cpu_bound = true;
  }
  if (!(beta < std::numeric_limits<double>::infinity()))
    throw UsageError(
        "no bandwidth to project with: measure an unshaped world of two workers, or give the "
        "link's rate");
  p.beta_bytes_per_s = beta;
  for (const auto& b : m.launches)
    p.communication_s += ring_allreduce_seconds(b.bytes, workers, alpha_s, beta);
  p.exposed_s = workers > 1
                    ? std::max(0.0, last_done_s(m.launches, workers, alpha_s, beta) - m.backward_s)
                    : 0.0;
  p.step_s = (workers > 1 ? m.compute_s : m.units_per_step / m.one_worker_throughput) + p.exposed_s;
  p.throughput = workers * m.units_per_step / p.step_s;
  p.efficiency = p.throughput / (workers * m.one_worker_throughput);
  return p;
}

}  // namespace plumb::analysis
