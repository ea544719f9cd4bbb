// Reuse-or-measure for operator profiles (see stored_or_fresh_profile.h).
#include "plumb/jobs/stored_or_fresh_profile.h"

#include <fmt/format.h>

#include "plumb/analysis/fusion_inputs.h"
#include "plumb/core/dtype.h"
#include "plumb/core/mode.h"
#include "plumb/platform/environment.h"
#include "plumb/store/profile_records.h"
#include "plumb/workloads/all_workloads.h"

namespace plumb::jobs {

std::optional<SourcedProfile> stored_profile(const std::vector<store::StoredProfile>& stored,
                                             const run::RunOptions& options) {
  const store::StoredProfile* p = analysis::newest_profile(
      stored, options.workload, mode_name(options.mode), dtype_name(options.dtype));
  if (p == nullptr) return std::nullopt;
  return SourcedProfile{p->id, true, p->batch, p->threads, p->result};
}

SourcedProfile fresh_profile(store::ResultsStore& db, const run::RunOptions& options,
                             const ProfileSourcing& sourcing, const run::ProgressFn& progress) {
  const Workload& w = workloads::default_registry().get(options.workload);
  const int64_t batch = options.config.get_int("batch");
  progress(fmt::format("profiling {} {} batch {} threads {} ...", options.workload,
                       mode_name(options.mode), batch, options.threads));
  const auto env = platform::capture_environment(options.threads, options.device);
  SourcedProfile s;
  s.result = profile::profile_workload(
      w, options, sourcing.steps, [&](const std::string& line) { progress("  " + line); },
      sourcing.trace);
  for (const auto& warning : s.result.warnings) progress("  warning: " + warning);
  s.id = db.save_profile(options, s.result, env, sourcing.group, sourcing.tag);
  s.batch = batch;
  s.threads = options.threads;
  return s;
}

SourcedProfile stored_or_fresh_profile(store::ResultsStore& db, const run::RunOptions& options,
                                       const ProfileSourcing& sourcing,
                                       const run::ProgressFn& progress) {
  if (sourcing.reuse_stored) {
    if (auto s = stored_profile(db.load_profiles(), options)) {
      progress(fmt::format("{} {}: stored profile {} (batch {}, {} thread(s))", options.workload,
                           mode_name(options.mode), s->id, s->batch, s->threads));
      return std::move(*s);
    }
  }
  return fresh_profile(db, options, sourcing, progress);
}

}  // namespace plumb::jobs
