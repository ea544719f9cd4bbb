// plumb sweep's job (see sweep_job.h).
#include "plumb/jobs/sweep_job.h"

#include <chrono>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "plumb/analysis/profile_roofline.h"
#include "plumb/analysis/sweep_point_metrics.h"
#include "plumb/core/clock.h"
#include "plumb/core/kill_point.h"
#include "plumb/core/mode.h"
#include "plumb/core/outcome.h"
#include "plumb/jobs/stored_or_fresh_probe.h"
#include "plumb/platform/environment.h"
#include "plumb/profile/sweep_point.h"
#include "plumb/report/text_table.h"
#include "plumb/store/sweep_records.h"

namespace plumb::jobs {
namespace {

using SweepClock = std::chrono::steady_clock;

// The points of `points` that `shard` owns (`owned`) and that are not in `done`, in order.
std::vector<const run::SweepPoint*> points_to_run(const std::vector<run::SweepPoint>& points,
                                                  const run::Shard& shard,
                                                  const std::set<std::string>& done,
                                                  size_t& owned) {
  std::vector<const run::SweepPoint*> todo;
  owned = 0;
  for (const auto& p : points) {
    if (static_cast<int>(p.index % static_cast<size_t>(shard.count)) != shard.index) continue;
    ++owned;
    if (done.count(p.key) == 0) todo.push_back(&p);
  }
  return todo;
}

// Measures one point and turns it into its stored record; stores it.
store::SweepPointRecord measure_and_store_point(const Workload& w, const SweepJobOptions& o,
                                                int64_t sweep_id, const run::SweepPoint& p,
                                                const std::optional<analysis::Ceilings>& ceilings,
                                                store::ResultsStore& db) {
  const run::SweepSpec& spec = o.spec;
  const auto env = platform::capture_environment(spec.threads, run::RunOptions{}.device);
  const profile::SweepPointMeasurement point = profile::measure_sweep_point(w, spec, p);
  const Outcome outcome = analysis::sweep_point_status(point, spec.budget.point_time_limit_s);
  store::SweepPointRecord rec;
  rec.sweep_id = sweep_id;
  rec.index = static_cast<int64_t>(p.index);
  rec.key = p.key;
  rec.mode = mode_name(p.mode);
  rec.params = run::point_params(spec, p);
  rec.status = outcome_state_name(outcome.state);
  rec.message = outcome.reason;
  rec.shard = fmt::format("{}/{}", o.shard.index, o.shard.count);
  for (double s : point.run.warmup_s) rec.warmup_s += s;
  for (double s : point.run.samples_s) rec.measure_s += s;
  rec.metrics = analysis::sweep_point_metrics(point, ceilings);
  rec.wall_s = point.wall_s;
  rec.finished_at = utc_now_iso8601();
  db.save_sweep_point(rec, point.options, point.run, point.memory ? &*point.memory : nullptr,
                      point.ops ? &*point.ops : nullptr, env, o.tag);
  return rec;
}

}  // namespace

SweepJobResult run_sweep_job(const Workload& w, const SweepJobOptions& o,
                             const run::ProgressFn& progress) {
  const run::SweepSpec& spec = o.spec;
  const auto points = run::expand(spec);
  auto db = store::ResultsStore::open(o.db);
  const int64_t sweep_id = db->register_sweep(spec.name, spec.workload, run::sweep_key(spec),
                                              static_cast<int64_t>(points.size()));
  std::set<std::string> done;
  for (const auto& p : db->load_sweep_points(sweep_id)) done.insert(p.key);
  std::optional<analysis::Ceilings> ceilings;
  if (o.probe) {
    ProbeRequest request;
    request.max_threads = spec.threads;
    const ProbeChoice probe = current_probe(*db, request);
    ceilings = analysis::ceilings_from_probe(probe.probe.document, "fp32", spec.threads,
                                             analysis::PeakKind::kInstruction);
  }
  SweepJobResult r;
  r.name = spec.name;
  r.workload = spec.workload;
  r.points = points.size();
  r.shard = o.shard;
  r.db_path = db->path();
  size_t owned = 0;
  const auto todo = points_to_run(points, o.shard, done, owned);
  r.skipped = owned - todo.size();
  progress(fmt::format(
      "sweep '{}' ({}): {} points{}; {} already stored, {} to run", spec.name, spec.workload,
      points.size(),
      o.shard.count > 1 ? fmt::format(", shard {}/{} has {}", o.shard.index, o.shard.count, owned)
                        : "",
      r.skipped, todo.size()));
  const auto start = SweepClock::now();
  for (size_t i = 0; i < todo.size(); ++i) {
    kill_point("sweep-point");
    r.finished.push_back(measure_and_store_point(w, o, sweep_id, *todo[i], ceilings, *db));
    const store::SweepPointRecord& rec = r.finished.back();
    const nlohmann::ordered_json& m = rec.metrics;
    r.warmup_seconds += rec.warmup_s;
    r.measure_seconds += rec.measure_s;
    if (rec.status != "ok") ++r.failures;
    const double elapsed = seconds_since(start);
    progress(fmt::format(
        "[{}/{}] {}: {} | failures {}, elapsed {}, ETA {}", i + 1, todo.size(), rec.key,
        rec.status == "ok"
            ? fmt::format("{:.1f} examples/s, {:.2f} GFLOP/s", m.at("examples_per_s").get<double>(),
                          m.at("flops_per_s").get<double>() / 1e9)
            : rec.status + ": " + rec.message,
        r.failures, report::format_duration(elapsed),
        report::format_duration(elapsed / static_cast<double>(i + 1) *
                                static_cast<double>(todo.size() - i - 1))));
  }
  r.seconds = seconds_since(start);
  return r;
}

}  // namespace plumb::jobs
