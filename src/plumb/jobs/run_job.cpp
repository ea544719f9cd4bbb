// plumb run's and plumb suite's job (see run_job.h).
#include "plumb/jobs/run_job.h"

#include <fmt/format.h>

#include "plumb/core/errors.h"
#include "plumb/core/mode.h"
#include "plumb/core/precision.h"
#include "plumb/platform/environment.h"
#include "plumb/run/model_footprint.h"
#include "plumb/store/run_record.h"

namespace plumb::jobs {

store::StoredRun run_and_store(const Workload& w, const run::RunOptions& options,
                               store::ResultsStore& db, const std::string& tag,
                               const run::ProgressFn& progress) {
  auto say = [&](const std::string& line) {
    if (progress) progress(line);
  };
  say(fmt::format("running {} {} batch {} threads {} {} on {} ...", w.info.name,
                  mode_name(options.mode), options.config.get_int("batch"), options.threads,
                  dtype_name(options.dtype), options.device));
  const auto indented = [&](const std::string& line) {
    say(fmt::format("  {} {}: {}", w.info.name, mode_name(options.mode), line));
  };
  // Before the run: the load and competition it records describe the machine, not this run.
  auto env = platform::capture_environment(options.threads, options.device);
  run::RunResult result = run::run_workload(w, options, indented);
  for (const auto& warning : result.warnings) say("  warning: " + warning);
  const int64_t id = db.save_run(options, result, env, tag);
  auto stored = db.load_run(id, /*with_samples=*/true);
  PLUMB_ASSERT(stored.has_value(), "run vanished right after it was stored");
  return *stored;
}

RunJobResult run_run_job(const RunJobOptions& o, const run::ProgressFn& progress) {
  // A model that cannot fit is refused before the store is touched (the runner checks again).
  for (const auto& planned : o.plan)
    if (planned.options.device == "cpu")
      run::refuse_if_it_cannot_fit(*planned.workload, planned.options);
  auto db = store::ResultsStore::open(o.db);  // fail before minutes of measuring
  RunJobResult out;
  out.db_path = db->path();
  for (const auto& planned : o.plan) {
    out.runs.push_back(run_and_store(*planned.workload, planned.options, *db, o.tag, progress));
    if (out.runs.back().result.status != run::RunStatus::kOk) out.all_ok = false;
  }
  return out;
}

}  // namespace plumb::jobs
