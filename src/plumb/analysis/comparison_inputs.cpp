// Selecting and matching the stored runs of plumb compare's two sides, and building the
// comparison from them (see comparison_inputs.h for the matching rules).
#include "plumb/analysis/comparison_inputs.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "plumb/analysis/comparison_identity.h"
#include "plumb/analysis/serve_comparison.h"
#include "plumb/core/errors.h"
#include "plumb/core/generation.h"
#include "plumb/core/text.h"
#include "plumb/platform/environment.h"
#include "plumb/run/generation_timing.h"
#include "plumb/run/step_loop.h"
#include "plumb/store/dist_record.h"
#include "plumb/store/profile_records.h"
#include "plumb/store/results_store.h"
#include "plumb/store/run_record.h"

namespace plumb::analysis {
namespace {

using KeyFields = std::map<std::string, std::string>;  // field -> value text, sorted by field

// Filters may also name these; they are never part of the match key.
const std::set<std::string> kSelectionOnlyFields = {"tag", "workload"};

// Everything that defines what a record measured, apart from the workload: its setting's fields
// (comparison_identity.h), by name.
KeyFields key_fields(const store::StoredRecord& r) {
  KeyFields k;
  for (const auto& f : stored_setting(r).fields)
    if (f.in_key) k[f.name] = f.value;
  return k;
}

std::optional<std::string> field_value(const store::StoredRecord& r, const std::string& field) {
  if (field == "tag") return r.tag;
  if (field == "workload") return r.workload;
  const KeyFields k = key_fields(r);
  auto it = k.find(field);
  if (it == k.end()) return std::nullopt;
  return it->second;
}

bool passes_filters(const store::StoredRecord& r, const std::map<std::string, std::string>& f) {
  for (const auto& [field, value] : f)
    if (field_value(r, field) != value) return false;
  return true;
}

std::string side_label(const ComparisonSide& side) {
  const std::string db = std::filesystem::path(side.db).filename().string();
  if (!side.run_ids.empty()) {
    std::vector<std::string> ids;
    for (int64_t id : side.run_ids) ids.push_back(std::to_string(id));
    return fmt::format("run{} {} of {}", ids.size() > 1 ? "s" : "", join(ids, ","), db);
  }
  if (side.filters.empty()) return db;
  std::vector<std::string> parts;
  for (const auto& [field, value] : side.filters) parts.push_back(field + "=" + value);
  return fmt::format("{} in {}", join(parts, " "), db);
}

// One side's candidate runs (without samples) and its store, kept open for samples/profiles.
struct LoadedSide {
  std::string label;
  std::unique_ptr<store::ResultsStore> store;
  std::vector<store::StoredRun> runs;  // selected
  std::vector<store::StoredRun> all;   // every run in the database: the history
};

std::string known_values(const std::vector<store::StoredRun>& runs, const std::string& field) {
  std::set<std::string> values;
  for (const auto& r : runs)
    if (auto v = field_value(r, field)) values.insert(v->empty() ? "''" : *v);
  return values.empty() ? "none" : join({values.begin(), values.end()}, ", ");
}

LoadedSide load_side(const ComparisonSide& side, const char* name) {
  LoadedSide loaded{
      side_label(side), store::ResultsStore::open(side.db, /*read_only=*/true), {}, {}};
  loaded.all = loaded.store->load_runs(/*with_samples=*/false);
  const std::vector<store::StoredRun>& all = loaded.all;
  // Data-parallel worlds (plumb dist) and serve sessions (plumb serve) are compared by
  // add_dist_rows and add_serve_rows; a side that selects them but no runs is no error.
  bool selects_worlds = !selected_serve_sessions(*loaded.store, side).empty();
  if (side.run_ids.empty())
    for (const auto& w : loaded.store->load_dist_worlds()) {
      bool pass = true;
      for (const auto& [field, value] : side.filters)
        pass = pass &&
               ((field == "tag" && w.tag == value) || (field == "workload" && w.workload == value));
      selects_worlds = selects_worlds || pass;
    }
  if (all.empty() && selects_worlds) return loaded;
  if (all.empty())
    throw UsageError(fmt::format("{} has no runs to compare; store some with plumb run --db {}",
                                 side.db, side.db));
  if (!side.run_ids.empty()) {
    for (int64_t id : side.run_ids) {
      auto it = std::find_if(all.begin(), all.end(), [&](const auto& r) { return r.id == id; });
      if (it == all.end())
        throw UsageError(
            fmt::format("run {} is not in {} (its runs are {} to {}); see plumb "
                        "export --db {}",
                        id, side.db, all.front().id, all.back().id, side.db));
      loaded.runs.push_back(*it);
    }
    return loaded;
  }
  for (const auto& [field, value] : side.filters) {
    const bool known = std::any_of(
        all.begin(), all.end(), [&](const auto& r) { return field_value(r, field).has_value(); });
    if (!known)
      throw UsageError(fmt::format(
          "side {}: no run in {} has a field '{}'; filter on tag, workload, mode, threads, "
          "device, batch or a config key",
          name, side.db, field));
  }
  for (const auto& r : all)
    if (passes_filters(r, side.filters)) loaded.runs.push_back(r);
  if (loaded.runs.empty() && !selects_worlds) {
    std::vector<std::string> hints;
    for (const auto& [field, value] : side.filters)
      hints.push_back(fmt::format("{} values there: {}", field, known_values(all, field)));
    throw UsageError(
        fmt::format("side {} ({}) selects no runs; {}", name, loaded.label, join(hints, "; ")));
  }
  return loaded;
}

// The data-parallel worlds (plumb dist) of a side that its tag and workload filters select,
// the newest ok one per setting: workload, workers, link, batch and threads per worker,
// buckets, overlap, device.
std::map<std::string, store::StoredDistWorld> dist_worlds(const LoadedSide& side,
                                                          const ComparisonSide& request) {
  std::map<std::string, store::StoredDistWorld> out;
  if (!request.run_ids.empty()) return out;
  for (auto& w : side.store->load_dist_worlds()) {
    if (w.status != run::RunStatus::kOk) continue;
    const auto tag = request.filters.find("tag");
    if (tag != request.filters.end() && tag->second != w.tag) continue;
    const auto workload = request.filters.find("workload");
    if (workload != request.filters.end() && workload->second != w.workload) continue;
    // GPU worlds (plumb dist --device cuda) say so; CPU worlds keep the key they always had.
    const std::string device =
        w.document.contains("spec") ? w.document["spec"].value("device", "cpu") : "cpu";
    const std::string key = fmt::format(
        "{} data-parallel workers={} link={} batch/worker={} threads/worker={} bucket={} "
        "overlap={}{}",
        w.workload, w.workers, w.link, w.batch_per_worker, w.threads_per_worker, w.bucket_bytes,
        w.overlap ? "on" : "off", device == "cpu" ? "" : " device=" + device);
    out[key] = std::move(w);  // id order: the newest wins
  }
  return out;
}

// A world's step times (the slowest worker's); a record without them (written by hand, or
// damaged) gives its mean step alone, which is not enough for an interval: not comparable.
SideSamples world_samples(const store::StoredDistWorld& w) {
  SideSamples s;
  const auto& d = w.document;
  if (d.contains("step_s") && d["step_s"].is_array() && d.contains("units_per_step")) {
    s.runs_step_s.push_back(d["step_s"].get<std::vector<double>>());
    s.units_per_step.push_back(d["units_per_step"].get<double>());
  } else {
    s.runs_step_s.push_back({w.step_mean_s});
    s.units_per_step.push_back(w.throughput * w.step_mean_s);
  }
  return s;
}

// One row per data-parallel setting both sides measured: the throughput of all workers, from
// the slowest worker's step times, with the same interval and verdict as runs.
void add_dist_rows(const ComparisonRequest& q, const LoadedSide& a, const LoadedSide& b,
                   Comparison& c) {
  const auto worlds_a = dist_worlds(a, q.a);
  const auto worlds_b = dist_worlds(b, q.b);
  for (const auto& [key, wa] : worlds_a) {
    const auto wb = worlds_b.find(key);
    if (wb == worlds_b.end()) {
      c.only_in_a.push_back(key);
      continue;
    }
    ComparisonRow row;
    row.workload = wa.workload;
    row.mode = "train";
    row.setting = key.substr(wa.workload.size() + 1);
    row.throughput_unit = wa.throughput_unit;
    row.throughput = compare_throughput(world_samples(wa), world_samples(wb->second), q.statistics);
    c.rows.push_back(std::move(row));
  }
  for (const auto& [key, wb] : worlds_b)
    if (!worlds_a.count(key)) c.only_in_b.push_back(key);
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  return std::filesystem::equivalent(a, b, ec) && !ec;
}

void refuse_overlap(const ComparisonRequest& q, const LoadedSide& a, const LoadedSide& b) {
  if (!same_file(q.a.db, q.b.db)) return;
  std::set<int64_t> ids_a;
  for (const auto& r : a.runs) ids_a.insert(r.id);
  for (const auto& r : b.runs)
    if (ids_a.count(r.id))
      throw UsageError(fmt::format(
          "A ({}) and B ({}) both select run {} of {}: give two different runs, databases or "
          "tags (or --where-a/--where-b filters that differ)",
          a.label, b.label, r.id, q.a.db));
}

// Key fields allowed to differ between matched runs.
std::set<std::string> ignored_fields(const ComparisonRequest& q, const LoadedSide& a,
                                     const LoadedSide& b) {
  std::set<std::string> known;
  for (const auto* side : {&a, &b})
    for (const auto& r : side->runs)
      for (const auto& [field, value] : key_fields(r)) known.insert(field);
  std::set<std::string> ignored;
  if (!q.a.run_ids.empty() || !q.b.run_ids.empty()) {
    ignored = known;  // explicit runs: only workload and mode must agree
  }
  for (const auto& field : q.ignore) {
    if (field == "mode" || field == "workload")
      throw UsageError(fmt::format(
          "--ignore {}: runs are always matched on workload and mode; compare one of them at a "
          "time with --where-a/--where-b",
          field));
    if (!known.count(field))
      throw UsageError(fmt::format("--ignore {}: no selected run has that field; fields: {}", field,
                                   join({known.begin(), known.end()}, ", ")));
    ignored.insert(field);
  }
  for (const auto& [field, value] : q.a.filters) {
    auto it = q.b.filters.find(field);
    if (it != q.b.filters.end() && it->second != value && !kSelectionOnlyFields.count(field))
      ignored.insert(field);
  }
  ignored.erase("mode");
  return ignored;
}

// The workload and the canonical key of the record's setting without the ignored fields.
std::string match_key(const store::StoredRecord& r, const std::set<std::string>& ignored) {
  run::Setting s = stored_setting(r);
  s.fields.erase(std::remove_if(s.fields.begin(), s.fields.end(),
                                [&](const run::SettingField& f) { return ignored.count(f.name); }),
                 s.fields.end());
  return r.workload + " " + run::print_setting(s, run::SettingPrint::kCanonical);
}

// Runs grouped by match key, keys in order of first appearance.
struct Groups {
  std::vector<std::string> order;
  std::map<std::string, std::vector<store::StoredRun>> runs;
};

Groups group_runs(const std::vector<store::StoredRun>& runs, const std::set<std::string>& ignored) {
  Groups g;
  for (const auto& r : runs) {
    const std::string key = match_key(r, ignored);
    if (!g.runs.count(key)) g.order.push_back(key);
    g.runs[key].push_back(r);
  }
  return g;
}

// The runs a side contributes to a row: every one with all_runs (or explicit ids), otherwise
// the newest successful one (the newest of all when none succeeded).
std::vector<store::StoredRun> pick_runs(std::vector<store::StoredRun> runs, bool all_runs) {
  if (all_runs) return runs;
  std::sort(runs.begin(), runs.end(), [](const auto& x, const auto& y) { return x.id > y.id; });
  for (const auto& r : runs)
    if (r.result.status == run::RunStatus::kOk) return {r};
  return {runs.front()};
}

// "threads: 1 -> 4" for each key field whose values differ between the two sides' runs.
std::vector<std::string> key_differences(const std::vector<store::StoredRun>& a,
                                         const std::vector<store::StoredRun>& b) {
  auto values = [](const std::vector<store::StoredRun>& runs) {
    std::map<std::string, std::set<std::string>> v;
    for (const auto& r : runs)
      for (const auto& [field, value] : key_fields(r)) v[field].insert(value);
    return v;
  };
  const auto va = values(a), vb = values(b);
  std::set<std::string> fields;
  for (const auto* side : {&va, &vb})
    for (const auto& [field, vs] : *side) fields.insert(field);
  std::vector<std::string> out;
  for (const auto& field : fields) {
    auto text = [&](const std::map<std::string, std::set<std::string>>& v) {
      auto it = v.find(field);
      return it == v.end() ? std::string("-") : join({it->second.begin(), it->second.end()}, "|");
    };
    if (text(va) != text(vb)) out.push_back(fmt::format("{}: {} -> {}", field, text(va), text(vb)));
  }
  return out;
}

// "batch=8 threads=1", plus every other matched field that varies among the rows of the same
// workload and mode (so two rows never print the same setting).
std::string setting_text(const store::StoredRun& r, const std::set<std::string>& varying) {
  const KeyFields k = key_fields(r);
  std::vector<std::string> parts = {"batch=" + k.at("batch"), "threads=" + k.at("threads")};
  for (const auto& field : varying)
    if (field != "batch" && field != "threads" && k.count(field))
      parts.push_back(field + "=" + k.at(field));
  return join(parts, " ");
}

std::set<std::string> varying_fields(const std::vector<store::StoredRun>& runs,
                                     const std::string& workload, const std::string& mode) {
  std::map<std::string, std::set<std::string>> values;
  for (const auto& r : runs)
    if (r.workload == workload && r.mode == mode)
      for (const auto& [field, value] : key_fields(r)) values[field].insert(value);
  std::set<std::string> varying;
  for (const auto& [field, vs] : values)
    if (vs.size() > 1) varying.insert(field);
  return varying;
}

// The samples of the successful runs; failed runs go to `failures`, and runs slowed with the
// injected-delay testing aid to `notes` (such a run must never pass for a real measurement).
SideSamples side_samples(const store::ResultsStore& db, const std::vector<store::StoredRun>& runs,
                         std::vector<std::string>& failures, std::vector<std::string>& notes) {
  SideSamples s;
  for (const auto& picked : runs) {
    auto r = db.load_run(picked.id, /*with_samples=*/true);
    PLUMB_ASSERT(r.has_value(), "a selected run vanished from its store");
    if (r->result.status != run::RunStatus::kOk) {
      failures.push_back(fmt::format("run {} {}: {}", r->id, run::status_name(r->result.status),
                                     r->result.message));
      continue;
    }
    if (r->result.injected_delay_ms > 0)
      notes.push_back(fmt::format("run {} was slowed on purpose: {} added {:g} ms to every step",
                                  r->id, run::kInjectDelayVariable, r->result.injected_delay_ms));
    s.runs_step_s.push_back(r->result.samples_s);
    s.units_per_step.push_back(r->result.units_per_step);
  }
  return s;
}

// A side's samples of one phase of its generative runs, as rates of that phase: each step's
// TTFT with the batch's prompt tokens as its units, or each step's TPOT with one token per
// request. nullopt when a successful run of the side has no generation.
std::optional<SideSamples> phase_samples(const store::ResultsStore& db,
                                         const std::vector<store::StoredRun>& runs, Phase phase) {
  SideSamples s;
  for (const auto& picked : runs) {
    auto r = db.load_run(picked.id, /*with_samples=*/true);
    PLUMB_ASSERT(r.has_value(), "a selected run vanished from its store");
    if (r->result.status != run::RunStatus::kOk) continue;
    if (!r->result.generation) return std::nullopt;
    const run::GenerationTimes& g = *r->result.generation;
    if (phase == Phase::kPrefill) {
      s.runs_step_s.push_back(g.ttft_s);
      s.units_per_step.push_back(static_cast<double>(g.batch * g.prompt));
    } else {
      s.runs_step_s.push_back(run::per_step_tpot(g.decode_s, g.gen));
      s.units_per_step.push_back(static_cast<double>(g.batch));
    }
  }
  return s;
}

// What can shift a run's throughput besides noise: the machine, the libraries, plumb's build,
// and the tag (which users give to one code version or configuration).
std::string conditions(const store::StoredRun& r) {
  const platform::Environment& e = r.environment;
  return join({r.tag, platform::machine_key(e), e.libtorch_version, e.blas, e.onednn_version,
               e.plumb_version, e.git_commit, e.compiler},
              " | ");
}

// A side's replicate groups for one row (run_comparison.h): the successful runs of exactly the
// settings `picked` measured (workload and every key field), on the machines they ran on,
// grouped by conditions(). The side's own successful runs are in their groups; `excluded`
// (runs of the other side, runs already in its groups) and runs slowed on purpose never
// are. Throughputs are the stored ones: units per step / mean step, as for the picked runs.
std::vector<std::vector<double>> replicate_groups(const std::vector<store::StoredRun>& history,
                                                  const std::vector<store::StoredRun>& picked,
                                                  std::set<int64_t>& excluded) {
  std::set<std::string> settings, machines;
  std::set<int64_t> own;
  for (const auto& r : picked) {
    settings.insert(match_key(r, {}));  // workload, mode and every key field
    machines.insert(platform::machine_key(r.environment));
    own.insert(r.id);
  }
  std::map<std::string, std::vector<double>> groups;
  for (const auto& r : history) {
    if (r.result.status != run::RunStatus::kOk || excluded.count(r.id)) continue;
    if (!own.count(r.id) && r.result.injected_delay_ms > 0) continue;
    if (!settings.count(match_key(r, {})) || !machines.count(platform::machine_key(r.environment)))
      continue;
    groups[conditions(r) + " | " + match_key(r, {})].push_back(r.result.throughput);
    excluded.insert(r.id);
  }
  std::vector<std::vector<double>> out;
  for (auto& [condition, throughputs] : groups) out.push_back(std::move(throughputs));
  return out;
}

// The newest successful profile that measured exactly what `run` measured (same workload and
// key fields; the same tag when the side filters on one).
const store::StoredProfile* matching_profile(const std::vector<store::StoredProfile>& profiles,
                                             const store::StoredRun& run,
                                             const ComparisonSide& side) {
  const store::StoredProfile* best = nullptr;
  const KeyFields key = key_fields(run);
  for (const auto& p : profiles) {
    if (p.workload != run.workload || p.result.status != run::RunStatus::kOk) continue;
    if (side.filters.count("tag") && p.tag != side.filters.at("tag")) continue;
    if (key_fields(p) != key) continue;
    if (best == nullptr || p.id > best->id) best = &p;
  }
  return best;
}

std::string unmatched_text(const std::vector<store::StoredRun>& runs) {
  const auto& r = runs.front();
  return fmt::format("{} {} {}", r.workload, r.mode, setting_text(r, {}));
}

std::string listing(const Groups& g) {
  std::vector<std::string> names;
  for (const auto& key : g.order) {
    if (names.size() == 4) {
      names.push_back(fmt::format("... ({} in all)", g.order.size()));
      break;
    }
    names.push_back(unmatched_text(g.runs.at(key)));
  }
  return join(names, "; ");
}

void refuse_mismatched_explicit_runs(const ComparisonRequest& q, const LoadedSide& a,
                                     const LoadedSide& b) {
  if (q.a.run_ids.size() != 1 || q.b.run_ids.size() != 1) return;
  const auto& ra = a.runs.front();
  const auto& rb = b.runs.front();
  if (ra.workload != rb.workload || ra.mode != rb.mode)
    throw UsageError(fmt::format(
        "run {} is {} {} but run {} is {} {}: compare runs of the same workload and mode", ra.id,
        ra.workload, ra.mode, rb.id, rb.workload, rb.mode));
}

}  // namespace

bool Comparison::slowdown_found() const {
  return std::any_of(rows.begin(), rows.end(), [](const ComparisonRow& r) {
    return r.throughput.verdict == Verdict::kSlower && !r.precision_differs;
  });
}

size_t Comparison::count(Verdict verdict) const {
  return static_cast<size_t>(std::count_if(rows.begin(), rows.end(), [&](const ComparisonRow& r) {
    return r.throughput.verdict == verdict;
  }));
}

Comparison compare_sources(const ComparisonRequest& q) {
  validate_comparison_options(q.statistics);
  LoadedSide a = load_side(q.a, "A");
  LoadedSide b = load_side(q.b, "B");
  refuse_overlap(q, a, b);
  refuse_mismatched_explicit_runs(q, a, b);
  const std::set<std::string> ignored = ignored_fields(q, a, b);
  const Groups groups_a = group_runs(a.runs, ignored);
  const Groups groups_b = group_runs(b.runs, ignored);

  Comparison c;
  c.label_a = a.label;
  c.label_b = b.label;
  c.statistics = q.statistics;
  c.ignored_fields = {ignored.begin(), ignored.end()};
  std::vector<store::StoredRun> all_selected = a.runs;
  all_selected.insert(all_selected.end(), b.runs.begin(), b.runs.end());
  const auto profiles_a = a.store->load_profiles();
  const auto profiles_b = b.store->load_profiles();
  std::vector<platform::Environment> environments_a, environments_b;

  for (const auto& key : groups_a.order) {
    auto partner = groups_b.runs.find(key);
    if (partner == groups_b.runs.end()) {
      c.only_in_a.push_back(unmatched_text(groups_a.runs.at(key)));
      continue;
    }
    // Runs given by id are all used; otherwise the newest per key unless --all-runs.
    const auto runs_a = pick_runs(groups_a.runs.at(key), q.all_runs || !q.a.run_ids.empty());
    const auto runs_b = pick_runs(partner->second, q.all_runs || !q.b.run_ids.empty());
    ComparisonRow row;
    row.workload = runs_a.front().workload;
    row.mode = runs_a.front().mode;
    row.setting =
        setting_text(runs_a.front(), varying_fields(all_selected, row.workload, row.mode));
    row.key_differences = key_differences(runs_a, runs_b);
    for (const auto& d : row.key_differences)
      if (d.rfind("dtype:", 0) == 0 || d.rfind("memory_format:", 0) == 0)
        row.precision_differs = true;
    for (const auto& r : runs_a) {
      row.runs_a.push_back(r.id);
      environments_a.push_back(r.environment);
    }
    for (const auto& r : runs_b) {
      row.runs_b.push_back(r.id);
      environments_b.push_back(r.environment);
    }
    row.throughput_unit = runs_a.front().result.throughput_unit;
    std::vector<std::string> failures;
    SideSamples samples_a = side_samples(*a.store, runs_a, failures, c.notes);
    SideSamples samples_b = side_samples(*b.store, runs_b, failures, c.notes);
    // Runs of one side never count as replicates of the other; with one database, a history
    // run joins A's groups only. (Run ids are per database.)
    const bool one_database = same_file(q.a.db, q.b.db);
    std::set<int64_t> excluded_a, excluded_b;
    if (one_database) excluded_a.insert(row.runs_b.begin(), row.runs_b.end());
    samples_a.replicate_groups = replicate_groups(a.all, runs_a, excluded_a);
    if (one_database) {
      excluded_b = excluded_a;
      for (int64_t id : row.runs_b) excluded_b.erase(id);
    }
    samples_b.replicate_groups = replicate_groups(b.all, runs_b, excluded_b);
    row.throughput = compare_throughput(samples_a, samples_b, q.statistics);
    if (row.throughput.verdict == Verdict::kNotComparable && !failures.empty())
      row.throughput.reason = join(failures, "; ");
    if (row.precision_differs && row.throughput.verdict != Verdict::kNotComparable)
      row.throughput.reason +=
          "; the sides ran in different precisions or memory formats, so this is what the "
          "change of precision buys or costs, not a regression (the exit status ignores it)";
    for (const auto& [phase, comparison] :
         {std::pair{Phase::kPrefill, &row.prefill}, std::pair{Phase::kDecode, &row.decode}}) {
      const auto phase_a = phase_samples(*a.store, runs_a, phase);
      const auto phase_b = phase_samples(*b.store, runs_b, phase);
      if (phase_a && phase_b) *comparison = compare_throughput(*phase_a, *phase_b, q.statistics);
    }
    const auto* profile_a = matching_profile(profiles_a, runs_a.front(), q.a);
    const auto* profile_b = matching_profile(profiles_b, runs_b.front(), q.b);
    if (profile_a != nullptr && profile_b != nullptr) {
      row.profile_a = profile_a->id;
      row.profile_b = profile_b->id;
      row.categories = category_deltas(profile_a->result.profile, profile_b->result.profile);
    }
    c.rows.push_back(std::move(row));
  }
  for (const auto& key : groups_b.order)
    if (!groups_a.runs.count(key)) c.only_in_b.push_back(unmatched_text(groups_b.runs.at(key)));
  add_dist_rows(q, a, b, c);
  add_serve_rows(q, *a.store, *b.store, c);

  if (c.rows.empty())
    throw UsageError(fmt::format(
        "no workload setting is on both sides: A ({}) has {}; B ({}) has {}; use --ignore FIELD "
        "to match runs that differ in FIELD",
        a.label, listing(groups_a), b.label, listing(groups_b)));
  c.environment = environment_fields(environments_a, environments_b);
  // The same noisy condition on both sides is no "difference", but it still makes every
  // verdict weaker: a busy machine moves throughput by several % from one run to the next.
  for (const auto& f : c.environment)
    if (f.field == "warnings" && (f.a != "none" || f.b != "none"))
      c.notes.push_back(fmt::format(
          "the runs were measured under noisy conditions (A: {}; B: {}); run-to-run differences "
          "beyond the interval are likely: repeat on an idle machine",
          f.a, f.b));

  const size_t unknown_spread =
      static_cast<size_t>(std::count_if(c.rows.begin(), c.rows.end(), [](const auto& r) {
        return r.throughput.verdict != Verdict::kNotComparable &&
               r.throughput.between_runs.dof == 0;
      }));
  if (unknown_spread > 0)
    c.notes.push_back(fmt::format(
        "{} of {} row(s) have one run per side and no earlier run of their setting: their "
        "interval covers the noise within each run, not between runs, which on most machines "
        "is larger; repeat the runs (e.g. 3 per side with --tag) and compare with --all-runs",
        unknown_spread, c.rows.size()));
  if (std::none_of(c.rows.begin(), c.rows.end(), [](const auto& r) { return r.profile_a != 0; }) ||
      std::none_of(c.rows.begin(), c.rows.end(), [](const auto& r) { return r.profile_b != 0; }))
    c.notes.push_back(
        "per-category deltas need a stored profile of the same setting on both sides (plumb "
        "profile WORKLOAD --db ...)");
  return c;
}

}  // namespace plumb::analysis
