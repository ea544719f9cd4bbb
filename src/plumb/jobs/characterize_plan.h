// plumb characterize's plan and its resume planner: the items of a pass (per workload a timed
// run and a profile of each mode, a memory pass, each precision against fp32), their run
// options and budgets, and which of them the store already holds under the pass's tag, so a
// killed pass rerun with the same name repeats nothing that finished.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "plumb/core/workload.h"
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
  std::string kind;  // "run", "profile", "memory", "precision"
  Mode mode = Mode::kInfer;
  Dtype dtype = Dtype::kFp32;
  std::string key() const;
  std::string label() const;
};

// What the store already holds under a tag: runs, profiles and memory passes by their item
// key; a precision counts as done when its run failed (stored with its status) or when its
// comparison with fp32 is stored.
struct StoredItems {
  std::set<std::string> done;
  std::map<std::string, store::StoredRun> fp32_infer;  // workload -> its ok fp32 inference run
  // Precision runs stored without their comparison (a pass killed in between): by item key,
  // compared on resume instead of timed again.
  std::map<std::string, store::StoredRun> uncompared;
};

StoredItems read_stored_items(const store::ResultsStore& db, const std::string& tag);

struct CharacterizeBudget {
  double max_time, max_warmup, target_ci, precision_time;
  int profile_steps;
};

CharacterizeBudget characterize_budget(const CharacterizeJobOptions& options);

// The run options of `item`; throws UsageError when they are invalid.
run::RunOptions item_options(const CharacterizeJobOptions& options,
                             const CharacterizeBudget& budget, const CharacterizeItem& item);

std::vector<CharacterizeItem> plan_items(const std::vector<const Workload*>& workloads,
                                         const std::vector<Dtype>& dtypes);

}  // namespace plumb::jobs
