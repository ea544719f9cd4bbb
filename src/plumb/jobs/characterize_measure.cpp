// plumb characterize's measure step (see characterize_measure.h).
#include "plumb/jobs/characterize_measure.h"

#include <cmath>
#include <iostream>

#include <fmt/format.h>

#include "plumb/jobs/decode_roofline_job.h"
#include "plumb/jobs/precision_measure.h"
#include "plumb/jobs/stored_or_fresh_profile.h"
#include "plumb/platform/environment.h"
#include "plumb/profile/memory_profiler.h"

namespace plumb::jobs {
namespace {

// A precision against the stored fp32 inference run of the same pass.
bool measure_precision_item(const CharacterizeItem& item, const run::RunOptions& o,
                            const std::string& tag, store::ResultsStore& db,
                            const StoredItems& stored, Fp32References& references) {
  const Workload& w = *item.workload;
  const auto reference = stored.fp32_infer.find(w.info.name);
  if (reference == stored.fp32_infer.end()) {
    std::cerr << "  no fp32 inference run to compare with: skipped\n";
    return false;
  }
  const auto timed = stored.uncompared.find(item.key());
  const auto run = timed != stored.uncompared.end()
                       ? *db.load_run(timed->second.id, /*with_samples=*/true)
                       : time_and_store(w, o, db, tag);
  if (run.result.status != run::RunStatus::kOk)
    return run.result.status == run::RunStatus::kUnsupported;
  const auto fp32_run = db.load_run(reference->second.id, /*with_samples=*/true);
  auto ref = references.find(w.info.name);
  if (ref == references.end()) ref = references.try_emplace(w.info.name, w, o).first;
  const auto e = ref->second.error_of(o);
  save_precision_comparison(db, run, *fp32_run, speed_against(*fp32_run, run), e.outcome.ok(),
                            e.error, e.outcome.reason);
  return true;
}

}  // namespace

bool measure_item(const CharacterizeJobOptions& job, const CharacterizeItem& item,
                  const run::RunOptions& o, const CharacterizeBudget& budget,
                  const std::string& tag, store::ResultsStore& db, StoredItems& stored,
                  Fp32References& references) {
  const Workload& w = *item.workload;
  const auto progress = [](const std::string& line) { std::cerr << "  " << line << '\n'; };
  const auto env = platform::capture_environment(o.threads, o.device);
  if (item.kind == "run") {
    const auto r = run::run_workload(w, o, progress);
    const int64_t id = db.save_run(o, r, env, tag);
    if (item.mode == Mode::kInfer && r.status == run::RunStatus::kOk)
      stored.fp32_infer[w.info.name] = *db.load_run(id, /*with_samples=*/false);
    return r.status == run::RunStatus::kOk;
  }
  if (item.kind == "profile") {
    // Measured now whatever the store holds: the pass's own profile, stored under its tag.
    ProfileSourcing sourcing;
    sourcing.steps = budget.profile_steps;
    sourcing.group = sourcing.tag = tag;
    return fresh_profile(db, o, sourcing, progress).result.status == run::RunStatus::kOk;
  }
  if (item.kind == "memory") {
    const auto m = profile::profile_memory(w, o, profile::MemoryOptions{});
    db.save_memory_profile(o, m, env, tag, tag);
    return m.status == run::RunStatus::kOk;
  }
  if (item.kind == "decode") {
    auto decode = decode_item_options(job, item, o, tag);
    decode.db = db.path();
    const auto r = run_decode_roofline(decode, progress);
    if (r.fit && std::isfinite(r.fit->bytes_per_s))
      progress(fmt::format("decode roof: {:.2f} GB/s (R^2 {:.3f}), {:.0f}% of DRAM triad",
                           r.fit->bytes_per_s / 1e9, r.fit->r_squared, 100 * r.fit_triad_fraction));
    return r.all_ok;
  }
  return measure_precision_item(item, o, tag, db, stored, references);
}

}  // namespace plumb::jobs
