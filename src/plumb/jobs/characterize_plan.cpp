// plumb characterize's items, budgets and resume planner (see characterize_plan.h).
#include "plumb/jobs/characterize_plan.h"

#include <algorithm>

#include <fmt/format.h>

#include "plumb/core/text.h"
#include "plumb/core/transformer_shape.h"
#include "plumb/store/precision_records.h"
#include "plumb/store/profile_records.h"
#include "plumb/store/run_record.h"

namespace plumb::jobs {
namespace {

std::string characterize_item_key(const std::string& workload, const char* kind,
                                  const std::string& mode, const std::string& dtype) {
  return fmt::format("{}|{}|{}|{}", workload, kind, mode, dtype);
}

bool characterize_generates(const Workload& w) {
  return generates_tokens(w, w.default_config());
}

}  // namespace

std::string CharacterizeItem::key() const {
  return characterize_item_key(workload->info.name, kind.c_str(), mode_name(mode),
                               dtype_name(dtype));
}

std::string CharacterizeItem::label() const {
  if (kind == "decode")
    return fmt::format("{} decode roofline (3 sizes at batch 1)", workload->info.name);
  return fmt::format("{} {} {}{}{}", workload->info.name, kind, mode_name(mode),
                     dtype == Dtype::kFp32 ? "" : std::string(" ") + dtype_name(dtype),
                     phases ? " (prefill and decode)" : "");
}

std::string characterize_decode_tag(const std::string& tag) {
  return tag + "/decode";
}

std::vector<std::vector<std::string>> characterize_decode_sizes(const Workload& w,
                                                                const std::string& size) {
  if (!characterize_generates(w)) return {};
  const auto presets = default_decode_sizes(w);
  if (presets.size() < 3) return {};
  Config largest = w.default_config();
  largest.apply_settings(presets.back());
  const double fp32_bytes =
      4.0 * static_cast<double>(parameter_count(w.transformer_shape(largest)));
  if (fp32_bytes > kCharacterizeDecodeMaxWeightBytes) return {};
  if (size != "tiny") return presets;
  return {{"layers=1"}, {"layers=2"}, {"layers=3"}};
}

StoredItems read_stored_items(const store::ResultsStore& db, const std::string& tag) {
  StoredItems s;
  std::map<int64_t, store::StoredRun> precision_runs;
  const auto runs = db.load_runs(/*with_samples=*/false);
  for (const auto& r : runs) {
    if (r.tag != tag) continue;
    if (r.dtype == Dtype::kFp32) {
      s.done.insert(characterize_item_key(r.workload, "run", r.mode, "fp32"));
      if (r.mode == "infer" && r.result.status == run::RunStatus::kOk) s.fp32_infer[r.workload] = r;
    } else if (r.result.status != run::RunStatus::kOk) {
      s.done.insert(characterize_item_key(r.workload, "precision", r.mode, dtype_name(r.dtype)));
    } else {
      precision_runs[r.id] = r;
    }
  }
  for (const auto& c : db.load_precision_comparisons()) {
    const auto it = precision_runs.find(c.run_id);
    if (it == precision_runs.end()) continue;
    s.done.insert(characterize_item_key(it->second.workload, "precision", it->second.mode,
                                        dtype_name(it->second.dtype)));
    precision_runs.erase(it);
  }
  for (auto& [id, r] : precision_runs)
    s.uncompared[characterize_item_key(r.workload, "precision", r.mode, dtype_name(r.dtype))] = r;
  for (const auto& p : db.load_profiles(tag))
    s.done.insert(characterize_item_key(p.workload, "profile", p.mode, "fp32"));
  for (const auto& m : db.load_memory_profiles(tag))
    s.done.insert(characterize_item_key(m.workload, "memory", m.mode, "fp32"));
  // A decode item is done when each of its three sizes has a run stored (a failed one too,
  // like any failed item); a sweep killed before its last size resumes at the sizes left.
  const std::string decode_tag = characterize_decode_tag(tag);
  for (const auto& r : runs)
    if (r.tag == decode_tag) ++s.decode_runs[r.workload];
  for (const auto& [workload, n] : s.decode_runs)
    if (n >= 3) s.done.insert(characterize_item_key(workload, "decode", "infer", "fp32"));
  return s;
}

CharacterizeBudget characterize_budget(const CharacterizeJobOptions& options) {
  CharacterizeBudget b =
      options.quick ? CharacterizeBudget{4, 4, 0.05, 2, 1} : CharacterizeBudget{10, 10, 0.02, 6, 2};
  if (options.max_time > 0) b.max_time = b.precision_time = options.max_time;
  if (options.max_warmup_time > 0) b.max_warmup = options.max_warmup_time;
  return b;
}

run::RunOptions item_options(const CharacterizeJobOptions& options,
                             const CharacterizeBudget& budget, const CharacterizeItem& item) {
  const Workload& w = *item.workload;
  run::RunOptions o;
  o.workload = w.info.name;
  o.mode = item.mode;
  o.dtype = item.dtype;
  o.config = options.size == "tiny" ? tiny_config(w) : suite_config(w);
  o.threads = options.threads;
  o.seed = options.seed;
  o.target_ci = budget.target_ci;
  o.min_samples = 5;
  o.max_time_s = item.kind == "precision" ? budget.precision_time : budget.max_time;
  o.max_warmup_s = budget.max_warmup;
  if (item.kind == "profile" || item.kind == "memory")
    o.max_warmup_s =
        std::min(budget.max_warmup, 3.0);  // the timed run already found the steady step
  if (item.kind == "decode") o.config.set_int("batch", 1);
  run::validate_options(o);
  return o;
}

DecodeRooflineOptions decode_item_options(const CharacterizeJobOptions& options,
                                          const CharacterizeItem& item, const run::RunOptions& base,
                                          const std::string& tag) {
  const Workload& w = *item.workload;
  DecodeRooflineOptions d;
  d.workload = &w;
  d.base = base;
  d.sweep = DecodeSweep::kSizes;
  d.sizes = characterize_decode_sizes(w, options.size);
  if (options.quick || options.size == "tiny") {
    d.prompt = base.config.get_int("prompt");
    d.gen = base.config.get_int("gen");
  }
  d.reuse_stored = true;
  d.db = options.db;
  d.tag = characterize_decode_tag(tag);
  d.probe.max_threads = options.threads;
  return d;
}

std::vector<CharacterizeItem> plan_items(const std::vector<const Workload*>& workloads,
                                         const std::vector<Dtype>& dtypes,
                                         const std::string& size) {
  std::vector<CharacterizeItem> items;
  for (const Workload* w : workloads) {
    const bool generates = characterize_generates(*w);
    std::vector<Mode> modes;
    if (w->info.train_by_default) modes.push_back(Mode::kTrain);
    modes.push_back(Mode::kInfer);
    for (Mode m : modes) items.push_back({w, "run", m, Dtype::kFp32});
    for (Mode m : modes)
      items.push_back({w, "profile", m, Dtype::kFp32, generates && m == Mode::kInfer});
    // A training step's mix where the workload trains (gradients, optimizer state), else
    // inference's; a generative workload's inference mix too, for its KV cache.
    items.push_back({w, "memory", modes.front(), Dtype::kFp32});
    if (generates && modes.front() != Mode::kInfer)
      items.push_back({w, "memory", Mode::kInfer, Dtype::kFp32});
    for (Dtype d : dtypes) items.push_back({w, "precision", Mode::kInfer, d});
    if (!characterize_decode_sizes(*w, size).empty())
      items.push_back({w, "decode", Mode::kInfer, Dtype::kFp32});
  }
  return items;
}

}  // namespace plumb::jobs
