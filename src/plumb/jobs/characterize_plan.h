// plumb characterize's plan and its resume planner: the items of a pass (per workload a timed
// run and a profile of each mode, a memory pass, each precision against fp32; for a generative
// workload also the inference memory mix with its KV cache and, for a family small enough,
// decode on the memory roof over three sizes), their run options and budgets, and which of
// them the store already holds under the pass's tag, so a killed pass rerun with the same name
// repeats nothing that finished.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "plumb/core/workload.h"
#include "plumb/jobs/decode_roofline_job.h"
#include "plumb/run/runner.h"
#include "plumb/store/results_store.h"
#include "plumb/store/run_record.h"

namespace plumb::jobs {

struct CharacterizeJobOptions {
  std::vector<const Workload*> workloads;
  std::vector<Dtype> dtypes;  // measured against fp32 in inference (fp32 itself left out)
  bool dtypes_named = false;  // --dtypes was given: a quick pass times emulated ones too
  bool quick = false;
  std::string name;            // the characterization's name; its tag is "characterize:<name>"
  std::string size = "suite";  // suite: plumb suite's batches and sizes; tiny: the tests' sizes
  int threads = 1;
  double max_time = 0, max_warmup_time = 0;  // 0: by quick
  uint64_t seed = 0;
  std::string db;
};

// One measurement of the pass. Keys name what is stored, so the store says what is done.
struct CharacterizeItem {
  const Workload* workload = nullptr;
  std::string kind;  // "run", "profile", "memory", "precision", "decode"
  Mode mode = Mode::kInfer;
  Dtype dtype = Dtype::kFp32;
  // A profile of a generation step: one pass observes both phases (prefill, decode), each
  // operator attributed to its phase's scope and stored with it (profile/stored_phase.h).
  bool phases = false;
  std::string key() const;
  std::string label() const;
};

// What the store already holds under a tag: runs, profiles and memory passes by their item
// key; a precision counts as done when its run failed (stored with its status) or when its
// comparison with fp32 is stored.
struct StoredItems {
  std::set<std::string> done;
  // workload -> its decode roofline runs stored under the pass's decode tag, any status.
  std::map<std::string, size_t> decode_runs;
  std::map<std::string, store::StoredRun> fp32_infer;  // workload -> its ok fp32 inference run
  // Precision runs stored without their comparison (a pass killed in between): by item key,
  // compared on resume instead of timed again.
  std::map<std::string, store::StoredRun> uncompared;
};

StoredItems read_stored_items(const store::ResultsStore& db, const std::string& tag);

// The tag of a pass's decode roofline runs: apart from the pass's own, so that its sizes are
// never taken for the workload's timed run or the reference of its precisions.
std::string characterize_decode_tag(const std::string& tag);

// The sizes a pass's decode roofline item sweeps (always three): the workload's first three
// presets at --size suite (gpt2: small, medium, large), 1, 2 and 3 layers of its tiny config at
// --size tiny; none (no item) for a workload without a decode phase, without presets, or whose
// third preset holds more than kCharacterizeDecodeMaxWeightBytes of fp32 weights.
std::vector<std::vector<std::string>> characterize_decode_sizes(const Workload& workload,
                                                                const std::string& size);
// GPT-2 large's 3.1 GB fits; Llama's third preset, llama-2-7b, needs 27 GB and minutes per
// decoded token on a small machine: its roof is measured with plumb analyze decode instead.
constexpr double kCharacterizeDecodeMaxWeightBytes = 4e9;

struct CharacterizeBudget {
  double max_time, max_warmup, target_ci, precision_time;
  int profile_steps;
};

CharacterizeBudget characterize_budget(const CharacterizeJobOptions& options);

// The run options of `item` (of a decode item: the base every size starts from); throws
// UsageError when they are invalid.
run::RunOptions item_options(const CharacterizeJobOptions& options,
                             const CharacterizeBudget& budget, const CharacterizeItem& item);

// A decode item's sweep over its sizes at batch 1, stored under the decode tag; stored runs of
// the same setting are taken again, so a pass killed mid-sweep measures only the sizes left.
// Quick: the suite config's short prompt and gen (gpt2: 32 and 8); else the sweep's defaults.
DecodeRooflineOptions decode_item_options(const CharacterizeJobOptions& options,
                                          const CharacterizeItem& item, const run::RunOptions& base,
                                          const std::string& tag);

std::vector<CharacterizeItem> plan_items(const std::vector<const Workload*>& workloads,
                                         const std::vector<Dtype>& dtypes, const std::string& size);

}  // namespace plumb::jobs
