// plumb memory's job (see memory_job.h).
#include "plumb/jobs/memory_job.h"

#include <unistd.h>

#include <memory>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "plumb/core/clock.h"
#include "plumb/core/errors.h"
#include "plumb/core/kill_point.h"
#include "plumb/core/mode.h"
#include "plumb/jobs/memory_report.h"
#include "plumb/platform/environment.h"
#include "plumb/profile/memory_profiler.h"
#include "plumb/report/text_table.h"
#include "plumb/store/profile_records.h"
#include "plumb/workloads/all_workloads.h"

namespace plumb::jobs {
namespace {

using report::format_bytes;

bool memory_pass_ok(const store::StoredMemoryProfile& p) {
  return p.result.status == run::RunStatus::kOk;
}

// One `plumb memory` call: its passes share a group and are stored as they finish.
class MemorySession {
 public:
  MemorySession(const MemoryJobOptions& options, const run::ProgressFn& progress)
      : workload_(workloads::default_registry().get(options.run.workload)),
        options_(options),
        progress_(progress),
        db_(store::ResultsStore::open(options.db)) {
    group_ = fmt::format("{}-{}-{}", workload_.info.name, utc_now_iso8601(), getpid());
  }

  // Profiles one batch (limit 0: the machine's available memory) and stores it.
  const store::StoredMemoryProfile& measure(int64_t batch, int64_t limit_bytes) {
    kill_point("memory-search");
    run::RunOptions o = options_.run;
    o.config.set_int("batch", batch);
    profile::MemoryOptions m;
    m.warmup_steps = options_.warmup_steps;
    m.limit_bytes = limit_bytes;
    progress_(fmt::format("memory {} {} batch {}{} ...", workload_.info.name, mode_name(o.mode),
                          batch, limit_bytes > 0 ? " under " + format_bytes(limit_bytes) : ""));
    const auto env = platform::capture_environment(o.threads, o.device);
    const auto result = profile::profile_memory(workload_, o, m);
    for (const auto& warning : result.warnings) progress_("  warning: " + warning);
    if (result.status == run::RunStatus::kOk) {
      progress_(fmt::format("  total peak {}", format_bytes(result.breakdown.total_peak)));
    } else {
      progress_(fmt::format("  {}: {}", run::status_name(result.status), result.message));
    }
    const int64_t id = db_->save_memory_profile(o, result, env, group_, options_.tag);
    for (auto& stored : db_->load_memory_profiles(group_))
      if (stored.id == id) passes_.push_back(std::move(stored));
    PLUMB_ASSERT(!passes_.empty() && passes_.back().id == id, "memory pass not read back");
    return passes_.back();
  }

  const std::vector<store::StoredMemoryProfile>& passes() const { return passes_; }
  std::vector<store::StoredMemoryProfile> take_passes() { return std::move(passes_); }
  const std::string& group() const { return group_; }
  const std::string& db_path() const { return db_->path(); }

  // The successful pass at `batch` without a limit of ours, if any.
  const store::StoredMemoryProfile* ok_at(int64_t batch) const {
    for (const auto& p : passes_)
      if (p.batch == batch && memory_pass_ok(p)) return &p;
    return nullptr;
  }

 private:
  const Workload& workload_;
  const MemoryJobOptions& options_;
  const run::ProgressFn& progress_;
  std::unique_ptr<store::ResultsStore> db_;
  std::string group_;
  std::vector<store::StoredMemoryProfile> passes_;
};

analysis::MeasuredBatch measured_batch(const store::StoredMemoryProfile& p) {
  return {p.batch, p.result.status, memory_pass_ok(p) ? p.result.breakdown.total_peak : 0};
}

// The search of the memory limit (analysis/memory_capacity.h) over this session's passes; its
// refusals name what batch 1 needs or why it did not run.
analysis::CapacityResult find_capacity(MemorySession& session, int64_t limit) {
  std::vector<analysis::MeasuredBatch> measured;
  for (const auto& p : session.passes()) measured.push_back(measured_batch(p));
  const auto c =
      analysis::find_memory_capacity(limit, measured, [&](int64_t batch, int64_t limit_bytes) {
        return measured_batch(session.measure(batch, limit_bytes));
      });
  if (c.stop == analysis::CapacityStop::kSearched) return c;
  const store::StoredMemoryProfile* one = session.ok_at(1);
  for (const auto& p : session.passes())
    if (one == nullptr && p.batch == 1) one = &p;
  PLUMB_ASSERT(one != nullptr, "the capacity search stopped without a pass at batch 1");
  if (c.stop == analysis::CapacityStop::kBatchOneFailed)
    throw UsageError(
        fmt::format("cannot find a batch under --memory-limit: batch 1 did not run ({}: {})",
                    run::status_name(one->result.status), one->result.message));
  throw UsageError(fmt::format(
      "--memory-limit {} is below what {} {} needs at batch 1: {} at its peak ({}); raise the "
      "limit to at least {}",
      format_bytes(static_cast<double>(limit)), one->workload, one->mode,
      format_bytes(static_cast<double>(c.batch1_bytes)),
      memory_mix_text(one->result.breakdown.at_total_peak),
      format_bytes(static_cast<double>(c.batch1_bytes))));
}

std::optional<analysis::MemoryScaling> memory_scaling_of(
    const std::vector<store::StoredMemoryProfile>& passes) {
  std::vector<analysis::MemoryPoint> points;
  std::set<int64_t> batches;
  for (const auto& p : passes) {
    if (!memory_pass_ok(p)) continue;
    points.push_back({p.batch, p.result.breakdown.peak, p.result.breakdown.total_peak});
    batches.insert(p.batch);
  }
  if (batches.size() < 2) return std::nullopt;
  return analysis::fit_memory_scaling(points);
}

}  // namespace

MemoryJobResult run_memory_job(const MemoryJobOptions& options, const run::ProgressFn& progress) {
  MemorySession session(options, progress);
  for (int b : options.batches) session.measure(b, 0);
  MemoryJobResult r;
  if (options.memory_limit > 0) r.capacity = find_capacity(session, options.memory_limit);
  r.workload = options.run.workload;
  r.mode = mode_name(options.run.mode);
  r.group = session.group();
  r.phase = options.phase;
  r.db_path = session.db_path();
  r.passes = session.take_passes();
  r.scaling = memory_scaling_of(r.passes);
  for (const auto& p : r.passes)
    if (!memory_pass_ok(p)) r.all_ok = false;
  if (r.capacity && r.capacity->verified == 0) r.all_ok = false;
  return r;
}

}  // namespace plumb::jobs
