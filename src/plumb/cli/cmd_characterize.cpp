// plumb characterize: what each workload does to the machine, measured in one pass that is
// stored as it goes. Per workload: throughput in training and inference, an operator profile
// of each mode (categories, operators, FLOPs and bytes: what the report's roofline, similarity
// and category views read), the memory mix of a training step (of inference for workloads that
// do not train), what bounds each profiled step, and inference speed and output
// error per precision against fp32; across the set, the category shares and their clustering. Every
// item is stored the moment it finishes, tagged with the characterization's name, so a killed pass
// rerun with the same name repeats nothing that finished (the item that was running is measured
// again).
#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>
#include <memory>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "plumb/analysis/breakdown.h"
#include "plumb/analysis/similarity.h"
#include "plumb/analysis/similarity_inputs.h"
#include "plumb/analysis/workload_findings.h"
#include "plumb/cli/commands.h"
#include "plumb/cli/dendrogram_text.h"
#include "plumb/cli/emulated_precisions.h"
#include "plumb/cli/list_options.h"
#include "plumb/cli/measure_options.h"
#include "plumb/cli/precision_measure.h"
#include "plumb/cli/table.h"
#include "plumb/cli/workload_selection.h"
#include "plumb/core/errors.h"
#include "plumb/core/json_number.h"
#include "plumb/core/json_text.h"
#include "plumb/core/kill_point.h"
#include "plumb/core/ratio_interval.h"
#include "plumb/core/text.h"
#include "plumb/platform/environment.h"
#include "plumb/profile/memory_profiler.h"
#include "plumb/profile/profiler.h"
#include "plumb/run/error_against_fp32.h"
#include "plumb/run/output_error.h"
#include "plumb/run/runner.h"
#include "plumb/run/step_loop.h"
#include "plumb/store/results_store.h"
#include "plumb/workloads/all_workloads.h"

namespace plumb::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct CharacterizeFlags {
  std::vector<std::string> workloads;
  std::string suites;
  bool quick = false;
  bool thorough = false;
  std::string name;            // default: "quick" or "full"
  std::string size = "suite";  // suite: plumb suite's batches and sizes; tiny: the tests' sizes
  int threads = 0;             // 0: every online core
  std::string dtypes = "bf16,int8";
  double max_time = 0, max_warmup_time = 0;  // 0: by --quick
  uint64_t seed = 0;
  std::string db = "plumb.db";
  bool json = false;
};

std::string item_key(const std::string& workload, const char* kind, const std::string& mode,
                     const std::string& dtype) {
  return fmt::format("{}|{}|{}|{}", workload, kind, mode, dtype);
}

// One measurement of the pass. Keys name what is stored, so the store says what is done.
struct Item {
  const Workload* workload = nullptr;
  std::string kind;  // "run", "profile", "memory", "precision"
  Mode mode = Mode::kInfer;
  Dtype dtype = Dtype::kFp32;
  std::string key() const {
    return item_key(workload->info.name, kind.c_str(), mode_name(mode), dtype_name(dtype));
  }
  std::string label() const {
    return fmt::format("{} {} {}{}", workload->info.name, kind, mode_name(mode),
                       dtype == Dtype::kFp32 ? "" : std::string(" ") + dtype_name(dtype));
  }
};

// What the store already holds under `tag`: runs, profiles and memory passes by their item
// key; a precision counts as done when its run failed (stored with its status) or when its
// comparison with fp32 is stored.
struct Stored {
  std::set<std::string> done;
  std::map<std::string, store::StoredRun> fp32_infer;  // workload -> its ok fp32 inference run
  // Precision runs stored without their comparison (a pass killed in between): by item key,
  // compared on resume instead of timed again.
  std::map<std::string, store::StoredRun> uncompared;
};

Stored read_stored(const store::ResultsStore& db, const std::string& tag) {
  Stored s;
  std::map<int64_t, store::StoredRun> precision_runs;
  for (auto& r : db.load_runs(/*with_samples=*/false)) {
    if (r.tag != tag) continue;
    if (r.dtype == "fp32") {
      s.done.insert(item_key(r.workload, "run", r.mode, "fp32"));
      if (r.mode == "infer" && r.result.status == run::RunStatus::kOk) s.fp32_infer[r.workload] = r;
    } else if (r.result.status != run::RunStatus::kOk) {
      s.done.insert(item_key(r.workload, "precision", r.mode, r.dtype));
    } else {
      precision_runs[r.id] = r;
    }
  }
  for (const auto& c : db.load_precision_comparisons()) {
    const auto it = precision_runs.find(c.run_id);
    if (it == precision_runs.end()) continue;
    s.done.insert(item_key(it->second.workload, "precision", it->second.mode, it->second.dtype));
    precision_runs.erase(it);
  }
  for (auto& [id, r] : precision_runs)
    s.uncompared[item_key(r.workload, "precision", r.mode, r.dtype)] = r;
  for (const auto& p : db.load_profiles(tag))
    s.done.insert(item_key(p.workload, "profile", p.mode, "fp32"));
  for (const auto& m : db.load_memory_profiles(tag))
    s.done.insert(item_key(m.workload, "memory", m.mode, "fp32"));
  return s;
}

struct Budget {
  double max_time, max_warmup, target_ci, precision_time;
  int profile_steps;
};

Budget budget_of(const CharacterizeFlags& f) {
  Budget b = f.quick ? Budget{4, 4, 0.05, 2, 1} : Budget{10, 10, 0.02, 6, 2};
  if (f.max_time > 0) b.max_time = b.precision_time = f.max_time;
  if (f.max_warmup_time > 0) b.max_warmup = f.max_warmup_time;
  return b;
}

run::RunOptions options_for(const CharacterizeFlags& f, const Budget& b, const Item& item) {
  const Workload& w = *item.workload;
  run::RunOptions o;
  o.workload = w.info.name;
  o.mode = item.mode;
  o.dtype = item.dtype;
  o.config = f.size == "tiny" ? tiny_config(w) : suite_config(w);
  o.threads = f.threads;
  o.seed = f.seed;
  o.target_ci = b.target_ci;
  o.min_samples = 5;
  o.max_time_s = item.kind == "precision" ? b.precision_time : b.max_time;
  o.max_warmup_s = b.max_warmup;
  if (item.kind == "profile" || item.kind == "memory")
    o.max_warmup_s = std::min(b.max_warmup, 3.0);  // the timed run already found the steady step
  run::validate_options(o);
  return o;
}

std::vector<Item> plan_items(const std::vector<const Workload*>& workloads,
                             const std::vector<Dtype>& dtypes) {
  std::vector<Item> items;
  for (const Workload* w : workloads) {
    std::vector<Mode> modes;
    if (w->info.train_by_default) modes.push_back(Mode::kTrain);
    modes.push_back(Mode::kInfer);
    for (Mode m : modes) items.push_back({w, "run", m, Dtype::kFp32});
    for (Mode m : modes) items.push_back({w, "profile", m, Dtype::kFp32});
    // A training step's mix where the workload trains (gradients, optimizer state), else
    // inference's.
    items.push_back({w, "memory", modes.front(), Dtype::kFp32});
    for (Dtype d : dtypes) items.push_back({w, "precision", Mode::kInfer, d});
  }
  return items;
}

// Measures one item and stores it; false when it failed (stored with its status).
// `stored` is what the store holds for the pass, kept current: an fp32 inference run joins it
// as the reference of the workload's precisions.
bool measure(const Item& item, const run::RunOptions& o, const Budget& b, const std::string& tag,
             store::ResultsStore& db, Stored& stored,
             std::map<std::string, run::Fp32Reference>& references) {
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
    const auto p = profile::profile_workload(w, o, b.profile_steps, progress);
    db.save_profile(o, p, env, tag, tag);
    return p.status == run::RunStatus::kOk;
  }
  if (item.kind == "memory") {
    const auto m = profile::profile_memory(w, o, profile::MemoryOptions{});
    db.save_memory_profile(o, m, env, tag, tag);
    return m.status == run::RunStatus::kOk;
  }
  // A precision against the stored fp32 inference run of the same pass.
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
  save_precision_comparison(db, run, *fp32_run, speed_against(*fp32_run, run), e.measured, e.error,
                            e.note);
  return true;
}

// ---- The summary: what the pass found, per workload ----

struct WorkloadSummary {
  std::map<std::string, const store::StoredRun*> runs;  // mode -> fp32 run
  std::map<std::string, const store::StoredProfile*> profiles;
  const store::StoredMemoryProfile* memory = nullptr;
  std::vector<const store::PrecisionComparisonRecord*> precisions;
  std::vector<const store::StoredRun*> unsupported;  // precisions this CPU or LibTorch cannot run
  std::vector<const store::UntimedPrecision*> untimed;  // left untimed by a quick pass, with why
  std::map<std::string, const store::StoredTuneSession*> tuned;  // mode -> newest found tuning
};

// "infer 1.62x (dtype=bf16)": the headroom plumb tune found over the stock configuration.
std::string tuning_text(const std::map<std::string, const store::StoredTuneSession*>& tuned) {
  std::vector<std::string> parts;
  for (const auto& [mode, t] : tuned)
    parts.push_back(fmt::format("{} {} ({})", mode,
                                ratio_text({t->speedup, t->speedup_low, t->speedup_high}),
                                t->document["best"].value("setting", std::string())));
  return parts.empty() ? "-" : join(parts, ", ");
}

std::string top_categories(const store::StoredProfile* p, size_t n) {
  if (p == nullptr || p->result.profile.ops.empty()) return "-";
  const auto b = analysis::breakdown(p->result.profile, analysis::GroupBy::kCategory);
  std::vector<std::string> parts;
  for (size_t i = 0; i < b.rows.size() && i < n; ++i)
    parts.push_back(fmt::format("{} {}", b.rows[i].name, format_percent(b.rows[i].time_share, 0)));
  return join(parts, ", ");
}

std::string memory_mix_text(const store::StoredMemoryProfile* m) {
  if (m == nullptr || m->result.status != run::RunStatus::kOk) return "-";
  return fmt::format("{}: {:.0f} MB, {}", m->mode,
                     static_cast<double>(m->result.breakdown.total_peak) / 1e6,
                     analysis::shares_text(analysis::memory_mix(m->result.breakdown), 1));
}

// Across the set, per mode: each workload's operator-time shares by category (Fathom's heat
// map, Fig. 5) and their clustering (Fathom's dendrogram, Fig. 4: centroid linkage on cosine
// distance). Null when fewer than two workloads were profiled in the mode.
struct CrossSet {
  std::string mode;
  analysis::FeatureVectors vectors;
  analysis::Dendrogram tree;
};

std::vector<CrossSet> cross_set_views(const store::ResultsStore& db, const std::string& tag,
                                      const std::vector<const Workload*>& chosen, int threads) {
  std::vector<CrossSet> out;
  for (const char* mode : {"train", "infer"}) {
    analysis::SimilarityQuery q;
    q.mode = mode;
    q.tag = tag;
    q.threads = threads;
    for (const Workload* w : chosen) q.workloads.push_back(w->info.name);
    try {
      CrossSet c{mode, analysis::profile_vectors(db, q), {}};
      c.tree = analysis::cluster(c.vectors, analysis::Linkage::kCentroid);
      out.push_back(std::move(c));
    } catch (const UsageError&) {
      // Fewer than two workloads profiled in this mode: nothing to compare.
    }
  }
  return out;
}

void print_cross_set(const CrossSet& c) {
  const size_t shown = std::min<size_t>(c.vectors.features.size(), 7);
  std::vector<std::string> header = {c.mode + ": share of operator time"};
  for (size_t f = 0; f < shown; ++f) header.push_back(c.vectors.features[f]);
  Table t(header);
  for (size_t i = 0; i < c.vectors.labels.size(); ++i) {
    std::vector<std::string> row = {c.vectors.labels[i]};
    for (size_t f = 0; f < shown; ++f) row.push_back(format_percent(c.vectors.values[i][f], 0));
    t.add_row(row);
  }
  std::cout << '\n';
  t.print(std::cout);
  std::cout << fmt::format(
      "\n{}: workloads clustered by those shares (cosine distance, centroid "
      "linkage)\n{}",
      c.mode, dendrogram_text(c.tree));
}

}  // namespace

void add_characterize_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "characterize",
      "The main job: throughput, operator profile, memory mix and precisions of each workload, "
      "stored as it goes (rerun to resume)");
  auto f = std::make_shared<CharacterizeFlags>();
  cmd->add_option("workloads", f->workloads, "Workload names (see plumb list)");
  cmd->add_option("--suite", f->suites, "Every workload of these suites, e.g. fathom,tbd");
  auto* quick = cmd->add_flag(
      "--quick", f->quick,
      "Short budgets (4 s per timed run, 1 profiled step, 2 s per precision): the README's main "
      "job. A precision this CPU has no units for (the probe's verdict) is not timed unless "
      "--dtypes names it");
  cmd->add_flag("--thorough", f->thorough,
                "Full budgets (the default without --quick); times every precision, emulated ones "
                "included")
      ->excludes(quick);
  cmd->add_option("--name", f->name,
                  "The characterization's name in the database: rerunning with the same name "
                  "resumes it (default: quick or full)");
  cmd->add_option("--size", f->size,
                  "suite: the batches and sizes plumb suite measures; tiny: seconds-per-step "
                  "models (a smoke test)")
      ->capture_default_str();
  cmd->add_option("--threads", f->threads,
                  "Intra-op threads (default: every CPU this process may use)");
  auto* dtypes_option = cmd->add_option("--dtypes", f->dtypes,
                                        "Precisions measured against fp32 in inference, or none")
                            ->capture_default_str();
  cmd->add_option("--max-time", f->max_time, "Measurement budget per timed run, seconds");
  cmd->add_option("--max-warmup-time", f->max_warmup_time, "Warm-up cap per run, seconds");
  cmd->add_option("--seed", f->seed, "Seed for weights and synthetic data")->capture_default_str();
  cmd->add_option("--db", f->db, "Results database (SQLite)")->capture_default_str();
  cmd->add_flag("--json", f->json, "Print one JSON document on stdout");
  cmd->callback([f, dtypes_option, &exit_code] {
    const std::vector<const Workload*> chosen = chosen_workloads(f->workloads, f->suites);
    if (f->size != "suite" && f->size != "tiny")
      throw UsageError("--size must be suite or tiny, got '" + f->size + "'");
    if (f->threads < 0) throw UsageError("--threads must be at least 1");
    if (f->threads == 0) f->threads = default_threads();
    if (f->max_time < 0 || f->max_warmup_time < 0)
      throw UsageError("--max-time and --max-warmup-time must be positive");
    std::vector<Dtype> dtypes;
    if (f->dtypes != "none" && !f->dtypes.empty()) {
      dtypes = parse_dtype_list(f->dtypes);
      dtypes.erase(std::remove(dtypes.begin(), dtypes.end(), Dtype::kFp32), dtypes.end());
    }
    if (f->name.empty()) f->name = f->quick ? "quick" : "full";
    const std::string tag = "characterize:" + f->name;
    const Budget budget = budget_of(*f);
    // Every item's options are checked before the first measurement starts.
    for (const auto& item : plan_items(chosen, dtypes)) options_for(*f, budget, item);

    auto db = store::ResultsStore::open(f->db);
    // A quick pass leaves out the precisions this CPU has no units for (LibTorch emulates them
    // at a fraction of fp32's speed: half of a quick pass on an AVX2-only CPU went to bf16),
    // unless --dtypes named them; each is recorded with why and the command that times it.
    if (f->quick && dtypes_option->count() == 0) {
      std::vector<std::string> names;
      for (const Workload* w : chosen) names.push_back(w->info.name);
      leave_emulated_precisions_untimed(*db, dtypes, names,
                                        {tag, f->name, f->size, f->db, f->threads});
    }
    const auto items = plan_items(chosen, dtypes);
    std::vector<run::RunOptions> options;
    for (const auto& item : items) options.push_back(options_for(*f, budget, item));
    Stored stored = read_stored(*db, tag);
    std::vector<size_t> todo;
    for (size_t i = 0; i < items.size(); ++i)
      if (stored.done.count(items[i].key()) == 0) todo.push_back(i);
    std::cerr << fmt::format(
        "characterization '{}' of {} workload(s), {} thread(s): {} items, {} already stored, {} to "
        "measure (rerun the same command to resume if it stops)\n",
        f->name, chosen.size(), f->threads, items.size(), items.size() - todo.size(), todo.size());
    const auto start = Clock::now();
    std::map<std::string, run::Fp32Reference> references;  // fp32 outputs per workload
    int failed = 0;
    for (size_t n = 0; n < todo.size(); ++n) {
      const Item& item = items[todo[n]];
      const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
      std::cerr << fmt::format("[{}/{}] {} (elapsed {}, ETA {})\n", n + 1, todo.size(),
                               item.label(), format_duration(elapsed),
                               n == 0 ? std::string("?")
                                      : format_duration(elapsed / static_cast<double>(n) *
                                                        static_cast<double>(todo.size() - n)));
      kill_point("characterize-item");
      if (!measure(item, options[todo[n]], budget, tag, *db, stored, references)) {
        ++failed;
        std::cerr << "  " << item.label() << ": failed (stored with its status)\n";
      }
    }
    if (failed > 0) exit_code = 1;

    // The summary, from the store: what this and any earlier part of the pass measured.
    const auto runs = db->load_runs(false);
    const auto profiles = db->load_profiles(tag);
    const auto memories = db->load_memory_profiles(tag);
    const auto comparisons = db->load_precision_comparisons();
    std::map<std::string, WorkloadSummary> by_workload;
    for (const auto& r : runs) {
      if (r.tag != tag) continue;
      if (r.dtype == "fp32") by_workload[r.workload].runs[r.mode] = &r;
      if (r.result.status == run::RunStatus::kUnsupported)
        by_workload[r.workload].unsupported.push_back(&r);
    }
    for (const auto& p : profiles) by_workload[p.workload].profiles[p.mode] = &p;
    for (const auto& m : memories) by_workload[m.workload].memory = &m;
    for (const auto& c : comparisons)
      if (c.tag == tag) by_workload[c.workload].precisions.push_back(&c);
    const auto untimed_stored = still_untimed(db->load_untimed_precisions(), runs, tag);
    for (const auto& u : untimed_stored) by_workload[u.workload].untimed.push_back(&u);
    // Tuning is its own command (plumb tune): its newest finding per workload and mode, whatever
    // its tag, when one exists.
    const auto tunings = db->load_tune_sessions();
    for (const auto& t : tunings)
      if (t.found) by_workload[t.workload].tuned[t.mode] = &t;
    const bool any_tuned =
        std::any_of(tunings.begin(), tunings.end(), [](const auto& t) { return t.found; });

    nlohmann::ordered_json out;
    out["name"] = f->name;
    out["tag"] = tag;
    out["threads"] = f->threads;
    out["items"] = items.size();
    out["measured"] = todo.size();
    out["already_stored"] = items.size() - todo.size();
    out["failed"] = failed;
    out["workloads"] = nlohmann::ordered_json::array();
    std::vector<std::string> header = {"workload",    "train",
                                       "infer",       "where time goes (infer)",
                                       "memory peak", "precisions (infer x fp32, error)"};
    if (any_tuned) header.push_back("tuning headroom (plumb tune)");
    Table table(header);
    const auto probes = db->load_probes();
    std::vector<std::string> findings;  // what bounds each profiled step, in words
    for (const Workload* w : chosen) {
      const auto& s = by_workload[w->info.name];
      nlohmann::ordered_json j;
      j["workload"] = w->info.name;
      std::vector<std::string> cells = {w->info.name};
      for (const char* mode : {"train", "infer"}) {
        const auto it = s.runs.find(mode);
        if (it == s.runs.end()) {
          cells.push_back("-");
          continue;
        }
        const auto& r = it->second->result;
        j["runs"][mode] = {{"run_id", it->second->id},
                           {"status", run::status_name(r.status)},
                           {"throughput", json_number(r.throughput)},
                           {"unit", r.throughput_unit}};
        cells.push_back(
            r.status == run::RunStatus::kOk
                ? fmt::format("{} {}", format_number(r.throughput, 1), r.throughput_unit)
                : run::status_name(r.status));
      }
      for (const auto& [mode, p] : s.profiles) {
        j["profiles"][mode] = {{"profile_id", p->id},
                               {"status", run::status_name(p->result.status)},
                               {"top_categories", top_categories(p, 3)}};
        if (p->result.status != run::RunStatus::kOk || p->result.profile.ops.empty()) continue;
        const auto ceilings = analysis::profile_ceilings(*p, probes);
        const auto finding =
            analysis::bound_finding(p->result.profile, ceilings ? &*ceilings : nullptr);
        j["profiles"][mode]["bound"] = {
            {"category", finding.category},
            {"category_share", json_number(finding.category_share)},
            {"bound", finding.bound},
            {"roof", finding.roof},
            {"roof_fraction", json_number(finding.roof_fraction)},
            {"memory_bound_share", json_number(finding.memory_bound_share)},
            {"overhead_share", json_number(finding.overhead_share)},
            {"step_utilisation",
             finding.step_utilisation >= 0 ? json_number(finding.step_utilisation) : nullptr},
            {"sentence", finding.sentence}};
        findings.push_back(fmt::format("{} {}: {}", w->info.name, mode, finding.sentence));
      }
      const auto infer_profile = s.profiles.find("infer");
      cells.push_back(
          top_categories(infer_profile == s.profiles.end() ? nullptr : infer_profile->second, 2));
      if (s.memory != nullptr)
        j["memory"] = {{"memory_id", s.memory->id},
                       {"status", run::status_name(s.memory->result.status)},
                       {"total_peak_bytes", s.memory->result.breakdown.total_peak}};
      cells.push_back(memory_mix_text(s.memory));
      std::vector<std::string> prec;
      j["precisions"] = nlohmann::ordered_json::array();
      for (const auto* c : s.precisions) {
        const auto speed = ratio_json({c->speedup, c->speedup_low, c->speedup_high});
        j["precisions"].push_back({{"dtype", c->dtype},
                                   {"run_id", c->run_id},
                                   {"speedup", speed["ratio"]},
                                   {"ci_low", speed["ci_low"]},
                                   {"ci_high", speed["ci_high"]},
                                   {"speedup_reason", speed["reason"]},
                                   {"relative_l2", json_number(c->error.relative_l2)},
                                   {"agreement", json_number(c->error.agreement)},
                                   {"agreement_kind", c->error.agreement_kind}});
        prec.push_back(analysis::precision_gain_text(*c));
      }
      for (const auto* r : s.unsupported) prec.push_back(r->dtype + " unsupported");
      j["untimed_precisions"] = nlohmann::ordered_json::array();
      for (const auto* u : s.untimed) {
        prec.push_back(u->dtype + " not timed (no units)");
        j["untimed_precisions"].push_back(
            {{"dtype", u->dtype}, {"reason", u->reason}, {"command", u->command}});
      }
      cells.push_back(prec.empty() ? "-" : join(prec, ", "));
      j["tuning"] = nlohmann::ordered_json::array();
      for (const auto& [mode, t] : s.tuned)
        j["tuning"].push_back({{"mode", mode},
                               {"tune_id", t->id},
                               {"batch", t->batch},
                               {"threads", t->threads},
                               {"speedup", json_number(t->speedup)},
                               {"ci_low", json_number(t->speedup_low)},
                               {"ci_high", json_number(t->speedup_high)},
                               {"best", t->document["best"].value("setting", std::string())},
                               {"command", t->best_command}});
      if (any_tuned) cells.push_back(tuning_text(s.tuned));
      table.add_row(cells);
      out["workloads"].push_back(j);
    }
    const auto cross = cross_set_views(*db, tag, chosen, f->threads);
    out["cross_set"] = nlohmann::ordered_json::array();
    for (const auto& c : cross) {
      nlohmann::ordered_json rows = nlohmann::ordered_json::array();
      for (size_t i = 0; i < c.vectors.labels.size(); ++i)
        rows.push_back({{"label", c.vectors.labels[i]}, {"shares", c.vectors.values[i]}});
      out["cross_set"].push_back({{"mode", c.mode},
                                  {"features", c.vectors.features},
                                  {"items", rows},
                                  {"dendrogram", analysis::dendrogram_json(c.tree)}});
    }
    if (f->json) {
      std::cout << json_text(out, 2) << '\n';
      return;
    }
    table.print(std::cout);
    // Why a precision was not timed, once per reason, with how to time it anyway.
    std::map<std::string, std::vector<std::string>> untimed_by_reason;
    for (const Workload* w : chosen)
      for (const auto* u : by_workload[w->info.name].untimed)
        untimed_by_reason[u->reason].push_back(u->command);
    for (const auto& [reason, commands] : untimed_by_reason)
      std::cout << fmt::format(
          "\nnot timed: {}. Time it anyway: {}{}\n", reason, commands.front(),
          commands.size() > 1 ? fmt::format(" (and {} more workloads)", commands.size() - 1) : "");
    if (!findings.empty()) std::cout << "\nwhat bounds each profiled step:\n";
    for (const auto& line : findings) std::cout << "  " << line << '\n';
    for (const auto& c : cross) print_cross_set(c);
    std::cout << fmt::format(
        "\nstored under '{}' in {}: plumb report --db {} draws every workload's profile, "
        "roofline, memory and precision views and the cross-workload similarity\n",
        tag, db->path(), db->path());
  });
}

}  // namespace plumb::cli
