// plumb roofline's job (see roofline_job.h).
#include "plumb/jobs/roofline_job.h"

#include <unistd.h>

#include <fmt/format.h>

#include "plumb/core/clock.h"
#include "plumb/core/dtype.h"
#include "plumb/jobs/stored_or_fresh_probe.h"
#include "plumb/jobs/stored_or_fresh_profile.h"
#include "plumb/store/profile_records.h"
#include "plumb/store/results_store.h"

namespace plumb::jobs {

RooflineJobResult run_roofline_job(const RooflineJobOptions& options,
                                   const run::ProgressFn& progress) {
  const run::RunOptions& o = options.run;
  auto db = store::ResultsStore::open(options.db);
  const ProbeChoice probe = current_probe(*db, {false, options.refresh_probe, 0});
  RooflineJobResult r;
  r.workload = o.workload;
  r.dtype = dtype_name(o.dtype);  // each op is placed by its own dtype too
  r.probe_id = probe.probe.id;
  r.ceilings = analysis::device_ceilings_from_probe(probe.probe.document, o.device, r.dtype,
                                                    o.threads, options.peak);
  const std::string group =
      fmt::format("{}-roofline-{}-{}", o.workload, utc_now_iso8601(), getpid());
  const auto pass =
      fresh_profile(*db, o, {false, options.steps, false, group, options.tag}, progress);
  r.status = pass.result.status;
  r.message = pass.result.message;
  if (r.status != run::RunStatus::kOk) return r;
  // Analysis reads the stored record, like every other view of a profile.
  const auto stored = db->load_profiles(group).at(0);
  r.mode = stored.mode;
  r.batch = stored.batch;
  r.threads = stored.threads;
  r.profile_id = stored.id;
  const auto& whole = stored.result.profile;
  r.phase = options.phase;
  const auto& prof = options.phase ? analysis::phase_profile(whole, *options.phase) : whole;
  r.rows = analysis::place_all(analysis::work_items(prof, options.by), r.ceilings);
  r.step = analysis::place(
      analysis::step_item(prof, options.phase ? phase_name(*options.phase) : "whole step"),
      r.ceilings);
  for (const auto& t : analysis::phase_times(whole, options.phase)) {
    const auto phase = analysis::phase_profile(whole, t.phase);
    r.phases.push_back(
        {t, analysis::place(analysis::step_item(phase, phase_name(t.phase)), r.ceilings),
         analysis::place_all(analysis::work_items(phase, options.by), r.ceilings)});
  }
  return r;
}

}  // namespace plumb::jobs
