// plumb analyze fusion's work (see fusion_job.h): graphs from stored profiles or passes measured
// now, mining on the probe's roofs, and fused-kernel checks for the patterns LibTorch can run
// fused.
#include "plumb/jobs/fusion_job.h"

#include <unistd.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "plumb/analysis/fusion_inputs.h"
#include "plumb/core/clock.h"
#include "plumb/core/dtype.h"
#include "plumb/core/mode.h"
#include "plumb/jobs/stored_or_fresh_probe.h"
#include "plumb/jobs/stored_or_fresh_profile.h"
#include "plumb/platform/environment.h"
#include "plumb/profile/fused_kernels.h"
#include "plumb/store/probe_record.h"
#include "plumb/store/profile_records.h"

namespace plumb::jobs {
namespace {

// What the mining of every workload shares: the store, the probe's roofs and this machine.
struct FusionRun {
  FusionRun(const FusionJobOptions& o, const run::ProgressFn& p)
      : options(o), progress(p), db(store::ResultsStore::open(o.db)) {}

  const FusionJobOptions& options;
  const run::ProgressFn& progress;
  std::unique_ptr<store::ResultsStore> db;
  store::StoredProbe probe;
  platform::Environment env;
  std::string machine;
  std::map<std::string, analysis::Ceilings> ceilings_of;  // by workload
  std::vector<store::StoredFusedKernelCheck> checks;
};

// Stored graphs first: a profile older than graph capture is refused before anything is
// measured or written. Fills what each workload is mined from; returns the graphs found.
std::vector<std::optional<profile::StepGraph>> stored_fusion_graphs(
    const FusionJobOptions& options, const store::ResultsStore& db,
    std::vector<FusionWorkload>& mined) {
  const auto stored = db.load_profiles();
  std::vector<std::optional<profile::StepGraph>> graphs(options.plan.size());
  for (size_t i = 0; i < options.plan.size(); ++i) {
    const auto& o = options.plan[i];
    FusionWorkload& m = mined[i];
    m.workload = o.workload;
    m.mode = mode_name(o.mode);
    m.dtype = dtype_name(o.dtype);
    m.batch = o.config.get_int("batch");
    m.threads = o.threads;
    const store::StoredProfile* p =
        options.profile ? nullptr : analysis::newest_profile(stored, o.workload, m.mode, m.dtype);
    if (p == nullptr) continue;
    graphs[i] = analysis::stored_graph(db, *p, options.db);
    m.profile_id = p->id;
    m.batch = p->batch;
    m.threads = p->threads;
  }
  return graphs;
}

// Workloads without a stored graph are profiled now; every workload with a graph is mined.
// Returns those mined.
std::vector<FusionWorkload> mine_fusion_workloads(
    FusionRun& r, std::vector<FusionWorkload> mined,
    std::vector<std::optional<profile::StepGraph>> graphs, bool& profile_failed) {
  ProfileSourcing sourcing;
  sourcing.steps = r.options.steps;
  sourcing.group = fmt::format("fusion-{}-{}", utc_now_iso8601(), getpid());
  sourcing.tag = r.options.tag;
  std::vector<FusionWorkload> done;
  for (size_t i = 0; i < r.options.plan.size(); ++i) {
    const auto& o = r.options.plan[i];
    FusionWorkload& m = mined[i];
    if (graphs[i]) {
      r.progress(fmt::format("{} {}: stored profile {} (batch {}, {} thread(s))", o.workload,
                             m.mode, m.profile_id, m.batch, m.threads));
    } else {
      SourcedProfile s = fresh_profile(*r.db, o, sourcing, r.progress);
      m.profile_id = s.id;
      if (s.result.status != run::RunStatus::kOk) {
        r.progress(fmt::format("  {}: {} ({}): no graph to mine", o.workload,
                               run::status_name(s.result.status), s.result.message));
        profile_failed = true;
        continue;
      }
      graphs[i] = std::move(s.result.graph);
    }
    const auto ceilings =
        analysis::ceilings_from_probe(r.probe.document, m.dtype, m.threads, r.options.peak_kind);
    m.mining = analysis::mine_fusion(*graphs[i], ceilings, r.options.mining);
    r.ceilings_of[o.workload] = ceilings;
    done.push_back(std::move(m));
  }
  return done;
}

// A fused-kernel check for `p` at `threads`: true when one is stored or measured now (and
// stored), false when LibTorch has no fused kernel for it or its shapes cannot be rebuilt.
bool realize_pattern(FusionRun& r, const analysis::FusionPattern& p, int threads) {
  const std::string kind = profile::fused_kernel_kind(p.labels, p.edges);
  if (kind.empty() || r.options.no_realize) return false;
  const std::string shapes = analysis::check_shapes(p);
  if (analysis::matching_check(r.checks, kind, shapes, threads, r.machine) != nullptr) return true;
  try {
    r.progress(fmt::format("  timing {} fused vs unfused on {} ...", kind, p.text));
    const auto check = profile::run_fused_kernel_check(kind, p.labels, p.example_signatures,
                                                       threads, r.options.check_seconds);
    store::StoredFusedKernelCheck saved;
    saved.id = r.db->save_fused_kernel_check(check, r.env);
    saved.machine = r.machine;
    saved.check = check;
    r.checks.push_back(std::move(saved));
    return true;
  } catch (const std::invalid_argument& e) {
    r.progress(fmt::format("  {}: not realized ({})", p.text, e.what()));
    return false;
  }
}

// The top patterns, and for every kind found further down the first pattern of that kind, so
// each kind a workload shows is realized once.
void realize_top_patterns(FusionRun& r, const std::vector<FusionWorkload>& mined) {
  r.checks = r.db->load_fused_kernel_checks();
  for (const auto& m : mined) {
    std::set<std::string> kinds;
    for (size_t i = 0; i < m.mining.patterns.size(); ++i) {
      const auto& p = m.mining.patterns[i];
      const std::string kind = profile::fused_kernel_kind(p.labels, p.edges);
      if (i < static_cast<size_t>(r.options.top) || (!kind.empty() && kinds.count(kind) == 0))
        if (realize_pattern(r, p, m.threads)) kinds.insert(kind);
    }
  }
}

// The checks that realize `m`'s patterns, by pattern key.
std::map<std::string, FusionRealized> realized_patterns(const FusionRun& r,
                                                        const FusionWorkload& m) {
  std::map<std::string, FusionRealized> out;
  for (const auto& p : m.mining.patterns) {
    const std::string kind = profile::fused_kernel_kind(p.labels, p.edges);
    if (kind.empty()) continue;
    const auto* c =
        analysis::matching_check(r.checks, kind, analysis::check_shapes(p), m.threads, r.machine);
    if (c != nullptr)
      out[p.key] = {*c, analysis::realized_fusion(c->check, r.ceilings_of.at(m.workload))};
  }
  return out;
}

}  // namespace

FusionResult run_fusion_job(const FusionJobOptions& options, const run::ProgressFn& progress) {
  FusionRun r(options, progress);
  std::vector<FusionWorkload> mined(options.plan.size());
  auto graphs = stored_fusion_graphs(options, *r.db, mined);
  int max_threads = 1;
  for (const auto& m : mined) max_threads = std::max(max_threads, m.threads);
  // The probe's roofs at the most threads any workload ran with (read, or measured and stored).
  r.probe = current_probe(*r.db, {false, false, max_threads}).probe;
  r.env = platform::capture_environment(options.plan.front().threads, options.plan.front().device);
  r.machine = platform::machine_key(r.env);

  FusionResult result;
  result.mode = options.mode;
  result.probe_id = r.probe.id;
  result.peak = options.peak;
  result.max_nodes = options.mining.max_nodes;
  result.min_count = options.mining.min_count;
  result.top = static_cast<size_t>(options.top);
  result.workloads =
      mine_fusion_workloads(r, std::move(mined), std::move(graphs), result.profile_failed);
  realize_top_patterns(r, result.workloads);
  std::vector<analysis::FusionMining> minings;
  std::vector<std::string> names;
  for (auto& m : result.workloads) {
    m.realized = realized_patterns(r, m);
    result.suite_realized.insert(m.realized.begin(), m.realized.end());
    minings.push_back(m.mining);
    names.push_back(m.workload);
  }
  result.suite = analysis::merge_patterns(minings, names);
  return result;
}

}  // namespace plumb::jobs
