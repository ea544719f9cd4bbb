// plumb characterize as a job: what each workload does to the machine, measured in one pass
// that is stored as it goes (characterize_plan.h: the items and the resume planner;
// characterize_measure.h: one item measured), then read back from the store whole: per
// workload its runs, profiles and what bounds them, memory mix, precisions and tuning found,
// and across the set the category shares and their clustering. The reporters are in
// characterize_report.h.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "plumb/analysis/similarity.h"
#include "plumb/analysis/workload_findings.h"
#include "plumb/jobs/characterize_generation.h"
#include "plumb/jobs/characterize_plan.h"
#include "plumb/store/precision_records.h"
#include "plumb/store/profile_records.h"
#include "plumb/store/results_store.h"
#include "plumb/store/run_record.h"
#include "plumb/store/tune_record.h"

namespace plumb::jobs {

// What the store holds for one workload of the pass (this and any earlier part of it).
struct CharacterizeWorkload {
  std::string workload;
  std::map<std::string, store::StoredRun> runs;          // mode -> fp32 run
  std::map<std::string, store::StoredProfile> profiles;  // mode -> profile
  // mode -> what bounds the profiled step, for the profiles with status ok and operators
  std::map<std::string, analysis::BoundFinding> bounds;
  // A generation step's phases (prefill, decode), per mode, each with what bounds it.
  std::map<std::string, std::vector<CharacterizePhase>> phases;
  // The training step's memory mix where the workload trains, else inference's.
  std::optional<store::StoredMemoryProfile> memory;
  std::optional<CharacterizeKvCache> kv_cache;  // of a generative inference memory pass
  std::optional<CharacterizeDecode> decode;     // the decode roofline item's runs and fit
  std::vector<store::PrecisionComparisonRecord> precisions;
  std::vector<store::StoredRun> unsupported;     // precisions this CPU or LibTorch cannot run
  std::vector<store::UntimedPrecision> untimed;  // left untimed by a quick pass, with why
  std::map<std::string, store::StoredTuneSession> tuned;  // mode -> newest found tuning
};

// Across the set, per mode: each workload's operator-time shares by category (Fathom's heat
// map, Fig. 5) and their clustering (Fathom's dendrogram, Fig. 4: centroid linkage on cosine
// distance); absent for a mode with fewer than two workloads profiled.
struct CharacterizeCrossSet {
  std::string mode;
  analysis::FeatureVectors vectors;
  analysis::Dendrogram tree;
};

struct CharacterizeResult {
  std::string name, tag;
  int threads = 1;
  size_t items = 0, measured = 0, already_stored = 0;
  int failed = 0;                               // items that failed now (stored with their status)
  std::vector<CharacterizeWorkload> workloads;  // in the order chosen
  bool any_tuned = false;
  std::vector<CharacterizeCrossSet> cross_set;
  std::string db_path;
};

// Checks every item's options, then measures what the store does not hold yet and reads the
// whole pass back. Throws UsageError for bad options before anything runs.
CharacterizeResult run_characterize_job(const CharacterizeJobOptions& options);

}  // namespace plumb::jobs
