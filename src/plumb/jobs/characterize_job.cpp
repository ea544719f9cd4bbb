// plumb characterize's pass and its summary from the store (see characterize_job.h).
#include "plumb/jobs/characterize_job.h"

#include <algorithm>
#include <chrono>
#include <iostream>

#include <fmt/format.h>

#include "plumb/analysis/similarity_inputs.h"
#include "plumb/core/errors.h"
#include "plumb/core/kill_point.h"
#include "plumb/core/mode.h"
#include "plumb/jobs/characterize_measure.h"
#include "plumb/jobs/emulated_precisions.h"
#include "plumb/report/text_table.h"
#include "plumb/store/probe_record.h"

namespace plumb::jobs {
namespace {

using CharacterizeClock = std::chrono::steady_clock;

// Measures the items not stored yet; returns how many failed.
int measure_characterize_todo(const CharacterizeJobOptions& job,
                              const std::vector<CharacterizeItem>& items,
                              const std::vector<run::RunOptions>& options,
                              const std::vector<size_t>& todo, const CharacterizeBudget& budget,
                              const std::string& tag, store::ResultsStore& db,
                              StoredItems& stored) {
  const auto start = CharacterizeClock::now();
  Fp32References references;
  int failed = 0;
  for (size_t n = 0; n < todo.size(); ++n) {
    const CharacterizeItem& item = items[todo[n]];
    const double elapsed = std::chrono::duration<double>(CharacterizeClock::now() - start).count();
    std::cerr << fmt::format("[{}/{}] {} (elapsed {}, ETA {})\n", n + 1, todo.size(), item.label(),
                             report::format_duration(elapsed),
                             n == 0
                                 ? std::string("?")
                                 : report::format_duration(elapsed / static_cast<double>(n) *
                                                           static_cast<double>(todo.size() - n)));
    kill_point("characterize-item");
    if (!measure_item(job, item, options[todo[n]], budget, tag, db, stored, references)) {
      ++failed;
      std::cerr << "  " << item.label() << ": failed (stored with its status)\n";
    }
  }
  return failed;
}

std::vector<CharacterizeCrossSet> characterize_cross_set_views(
    const store::ResultsStore& db, const std::string& tag,
    const std::vector<const Workload*>& chosen, int threads) {
  std::vector<CharacterizeCrossSet> out;
  for (const char* mode : {"train", "infer"}) {
    analysis::SimilarityQuery q;
    q.mode = mode;
    q.tag = tag;
    q.threads = threads;
    for (const Workload* w : chosen) q.workloads.push_back(w->info.name);
    try {
      CharacterizeCrossSet c{mode, analysis::profile_vectors(db, q), {}};
      c.tree = analysis::cluster(c.vectors, analysis::Linkage::kCentroid);
      out.push_back(std::move(c));
    } catch (const UsageError&) {
      // Fewer than two workloads profiled in this mode: nothing to compare.
    }
  }
  return out;
}

// What bounds each profiled step with operators, on this machine's stored roofs.
void add_characterize_bounds(CharacterizeWorkload& s,
                             const std::vector<store::StoredProbe>& probes) {
  for (const auto& [mode, p] : s.profiles) {
    if (p.result.status != run::RunStatus::kOk || p.result.profile.ops.empty()) continue;
    const auto ceilings = analysis::profile_ceilings(p, probes);
    s.bounds[mode] = analysis::bound_finding(p.result.profile, ceilings ? &*ceilings : nullptr);
    auto phases = characterize_phases(p, probes);
    if (!phases.empty()) s.phases[mode] = std::move(phases);
  }
}

// The summary, from the store: what this and any earlier part of the pass measured.
void read_characterize_pass(const store::ResultsStore& db, const CharacterizeJobOptions& options,
                            CharacterizeResult& result) {
  const std::string& tag = result.tag;
  std::map<std::string, CharacterizeWorkload> by_workload;
  const auto runs = db.load_runs(false);
  for (const auto& r : runs) {
    if (r.tag != tag) continue;
    if (r.dtype == Dtype::kFp32) by_workload[r.workload].runs[r.mode] = r;
    if (r.result.status == run::RunStatus::kUnsupported)
      by_workload[r.workload].unsupported.push_back(r);
  }
  for (const auto& p : db.load_profiles(tag)) by_workload[p.workload].profiles[p.mode] = p;
  for (const auto& m : db.load_memory_profiles(tag)) {
    auto& s = by_workload[m.workload];
    if (!s.memory || m.mode == mode_name(Mode::kTrain)) s.memory = m;
    if (auto kv = characterize_kv_cache(m)) s.kv_cache = kv;
  }
  for (const auto& c : db.load_precision_comparisons())
    if (c.tag == tag) by_workload[c.workload].precisions.push_back(c);
  for (const auto& u : still_untimed(db.load_untimed_precisions(), runs, tag))
    by_workload[u.workload].untimed.push_back(u);
  // Tuning is its own command (plumb tune): its newest finding per workload and mode, whatever
  // its tag, when one exists.
  for (const auto& t : db.load_tune_sessions()) {
    if (!t.found) continue;
    by_workload[t.workload].tuned[t.mode] = t;
    result.any_tuned = true;
  }
  const auto probes = db.load_probes();
  for (const Workload* w : options.workloads) {
    auto& s = by_workload[w->info.name];
    s.workload = w->info.name;
    add_characterize_bounds(s, probes);
    s.decode = characterize_decode(db, runs, w->info.name, characterize_decode_tag(tag));
    result.workloads.push_back(std::move(s));
  }
  result.cross_set = characterize_cross_set_views(db, tag, options.workloads, options.threads);
}

}  // namespace

CharacterizeResult run_characterize_job(const CharacterizeJobOptions& options) {
  CharacterizeResult result;
  result.name = options.name;
  result.tag = "characterize:" + options.name;
  result.threads = options.threads;
  const auto budget = characterize_budget(options);
  std::vector<Dtype> dtypes = options.dtypes;
  // Every item's options are checked before the first measurement starts.
  for (const auto& item : plan_items(options.workloads, dtypes, options.size)) {
    const auto o = item_options(options, budget, item);
    if (item.kind == "decode")
      check_decode_roofline(decode_item_options(options, item, o, result.tag));
  }

  auto db = store::ResultsStore::open(options.db);
  result.db_path = db->path();
  // A quick pass leaves out the precisions this CPU has no units for (LibTorch emulates them
  // at a fraction of fp32's speed: half of a quick pass on an AVX2-only CPU went to bf16),
  // unless --dtypes named them; each is recorded with why and the command that times it.
  if (options.quick && !options.dtypes_named) {
    std::vector<std::string> names;
    for (const Workload* w : options.workloads) names.push_back(w->info.name);
    leave_emulated_precisions_untimed(
        *db, dtypes, names, {result.tag, options.name, options.size, options.db, options.threads});
  }
  const auto items = plan_items(options.workloads, dtypes, options.size);
  std::vector<run::RunOptions> item_runs;
  for (const auto& item : items) item_runs.push_back(item_options(options, budget, item));
  StoredItems stored = read_stored_items(*db, result.tag);
  std::vector<size_t> todo;
  for (size_t i = 0; i < items.size(); ++i)
    if (stored.done.count(items[i].key()) == 0) todo.push_back(i);
  result.items = items.size();
  result.measured = todo.size();
  result.already_stored = items.size() - todo.size();
  std::cerr << fmt::format(
      "characterization '{}' of {} workload(s), {} thread(s): {} items, {} already stored, {} to "
      "measure (rerun the same command to resume if it stops)\n",
      options.name, options.workloads.size(), options.threads, items.size(), result.already_stored,
      todo.size());
  result.failed =
      measure_characterize_todo(options, items, item_runs, todo, budget, result.tag, *db, stored);
  read_characterize_pass(*db, options, result);
  return result;
}

}  // namespace plumb::jobs
