// plumb profile's job (see profile_job.h).
#include "plumb/jobs/profile_job.h"

#include <unistd.h>

#include <filesystem>

#include <fmt/format.h>

#include "plumb/analysis/profile_roofline.h"
#include "plumb/analysis/workload_findings.h"
#include "plumb/core/atomic_file.h"
#include "plumb/core/clock.h"
#include "plumb/core/dtype.h"
#include "plumb/core/errors.h"
#include "plumb/core/json_text.h"
#include "plumb/jobs/stored_or_fresh_profile.h"
#include "plumb/platform/probe.h"
#include "plumb/profile/trace_file.h"
#include "plumb/store/profile_records.h"

namespace plumb::jobs {
namespace {

// Refused before the passes run, not after: the directory must exist and be writable.
void check_trace_directory(const std::string& trace) {
  const auto dir = std::filesystem::path(trace).parent_path();
  const std::string d = dir.empty() ? "." : dir.string();
  if (::access(d.c_str(), W_OK) != 0)
    throw UsageError(fmt::format(
        "--trace: cannot write into '{}': check that the directory exists and is writable", d));
}

// One file per pass: the path as given for a single pass, else "-<mode>-<threads>t" before
// the extension.
std::string trace_path_of_pass(const std::string& path, const run::RunOptions& o, bool several) {
  if (!several) return path;
  const auto dot = path.rfind('.');
  const auto slash = path.rfind('/');
  const bool has_ext = dot != std::string::npos && (slash == std::string::npos || dot > slash);
  const std::string suffix = fmt::format("-{}-{}t", mode_name(o.mode), o.threads);
  return has_ext ? path.substr(0, dot) + suffix + path.substr(dot) : path + suffix;
}

void write_pass_trace(const ProfileJobOptions& options, const run::RunOptions& o,
                      const profile::ProfileResult& result, const run::ProgressFn& progress) {
  const std::string path = trace_path_of_pass(options.trace, o, options.passes.size() > 1);
  const std::string title = fmt::format("{} {} batch {}, {} thread(s)", o.workload,
                                        mode_name(o.mode), o.config.get_int("batch"), o.threads);
  write_file_atomically(path, json_text(profile::chrome_trace(result, title)));
  progress(fmt::format("  trace of the last step ({} events): {}", result.trace.size(), path));
}

// Per mode: scaling over threads; across modes: train vs infer at the first thread count.
void compare_profile_passes(const std::vector<Mode>& modes, ProfileJobResult& r) {
  const store::StoredProfile* first_of_mode[2] = {nullptr, nullptr};
  for (Mode m : modes) {
    std::vector<int> threads;
    std::vector<profile::StepProfile> profiles;
    for (const auto& p : r.passes) {
      if (p.mode != mode_name(m) || p.result.status != run::RunStatus::kOk) continue;
      if (first_of_mode[static_cast<int>(m)] == nullptr) first_of_mode[static_cast<int>(m)] = &p;
      threads.push_back(p.threads);
      profiles.push_back(p.result.profile);
    }
    if (threads.size() >= 2)
      r.scaling.emplace_back(mode_name(m), analysis::thread_scaling(threads, profiles));
  }
  const auto* train = first_of_mode[static_cast<int>(Mode::kTrain)];
  const auto* infer = first_of_mode[static_cast<int>(Mode::kInfer)];
  if (train != nullptr && infer != nullptr)
    r.train_vs_infer = analysis::compare_modes(train->result.profile, infer->result.profile);
}

}  // namespace

ProfileJobResult run_profile_job(const ProfileJobOptions& options,
                                 const run::ProgressFn& progress) {
  if (!options.trace.empty()) check_trace_directory(options.trace);
  auto db = store::ResultsStore::open(options.db);
  ProfileJobResult r;
  r.workload = options.passes.front().workload;
  r.batch = options.passes.front().config.get_int("batch");
  r.group = fmt::format("{}-{}-{}", r.workload, utc_now_iso8601(), getpid());
  r.phase = options.phase;
  r.db_path = db->path();
  const ProfileSourcing sourcing{false, options.steps, !options.trace.empty(), r.group,
                                 options.tag};
  for (const auto& o : options.passes) {
    const auto pass = fresh_profile(*db, o, sourcing, progress);
    if (!options.trace.empty() && !pass.result.trace.empty())
      write_pass_trace(options, o, pass.result, progress);
    if (pass.result.status != run::RunStatus::kOk) r.all_ok = false;
  }
  r.passes = db->load_profiles(r.group);
  compare_profile_passes(options.modes, r);
  place_on_stored_roofs(*db, r);
  return r;
}

void place_on_stored_roofs(const store::ResultsStore& db, ProfileJobResult& r) {
  r.roofs.clear();
  r.probe_id = 0;
  r.roofs_note.clear();
  const auto probes = db.load_probes();
  for (const auto& p : r.passes) {
    r.roofs.emplace_back();
    const auto* probe = analysis::newest_probe_of(p.environment, probes);
    if (probe == nullptr) {
      r.roofs_note = fmt::format(
          "no probe of this machine is stored in {}; plumb probe --quick --db {} measures one",
          r.db_path, r.db_path);
    } else if (probe->document.value("plumb_probe_version", 0) != platform::kProbeDocumentVersion) {
      r.roofs_note = fmt::format(
          "probe #{} was stored by an older plumb; plumb probe --quick --refresh --db {} measures "
          "it again",
          probe->id, r.db_path);
    } else {
      try {
        r.roofs.back() = analysis::ceilings_from_probe(probe->document, dtype_name(p.dtype),
                                                       p.threads, analysis::PeakKind::kInstruction);
        r.probe_id = probe->id;
      } catch (const UsageError& e) {
        r.roofs_note = fmt::format("probe #{} gives no roofs: {}", probe->id, e.what());
      }
    }
  }
}

}  // namespace plumb::jobs
