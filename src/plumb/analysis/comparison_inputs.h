// plumb compare's inputs and whole result: which stored runs make up side A and side B (run
// ids, a database, tagged groups, key filters), how runs of the two sides are matched, and the
// comparison built from them (environment differences first, then one row per matched
// workload setting with its throughput ratio, verdict and per-category deltas). The CLI and
// the HTML report both call compare_sources() and comparison_json().
//
// Matching (docs/compare.md):
// - Every run has a key: its workload plus its setting's canonical key (comparison_identity.h:
//   mode, batch, threads, device, precision, memory format, engine, heap and each config
//   entry). Runs of A and B are matched when their keys are equal, except for the
//   fields in `ignore` and the fields both sides filter on with different values (so
//   `--where-a threads=1 --where-b threads=4` matches each workload at 1 thread with itself at
//   4 threads). The tag is never part of the key.
// - Explicit run ids: runs are matched on workload and mode only (the user picked them; every
//   other field may differ and is shown).
// - Per key and side, the newest successful run is used; with all_runs, every run with that
//   key is a replicate (the between-run variation then enters the interval).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "plumb/analysis/comparison_context.h"
#include "plumb/analysis/run_comparison.h"

namespace plumb::analysis {

struct ComparisonSide {
  std::string db;                              // database path
  std::vector<int64_t> run_ids;                // explicit runs; empty: select by filters
  std::map<std::string, std::string> filters;  // key -> value: tag, mode, threads, device, batch,
                                               // or any config key
};

struct ComparisonRequest {
  ComparisonSide a, b;
  std::vector<std::string> ignore;  // key fields that may differ between matched runs
  bool all_runs = false;            // every matching run is a replicate (default: newest)
  ComparisonOptions statistics;
};

// One matched workload setting.
struct ComparisonRow {
  std::string workload;
  std::string mode;
  std::string setting;  // the key fields that tell rows apart: "batch=8 threads=1"
  std::vector<std::string> key_differences;  // "threads: 1 -> 4" for fields that differ
  std::vector<int64_t> runs_a, runs_b;       // run ids (every run used, failed ones included)
  std::string throughput_unit;
  ThroughputComparison throughput;
  // Generative inference runs on both sides (docs/llm.md): prompt tokens/s of the prefill
  // (from each step's TTFT) and output tokens/s of the decode (from each step's TPOT), compared
  // by the same method as the step's throughput. Absent for other runs.
  std::optional<ThroughputComparison> prefill, decode;
  int64_t profile_a = 0, profile_b = 0;   // newest matching profiles (0: none)
  std::vector<CategoryDelta> categories;  // empty unless both profiles exist
  // The sides ran in different precisions or memory formats: a slower side is a precision
  // trade, not a regression of one configuration, and the exit status does not count it.
  bool precision_differs = false;
};

struct Comparison {
  std::string label_a, label_b;  // "run 3 of plumb.db", "a.db", "tag=x in a.db"
  ComparisonOptions statistics;
  std::vector<std::string> ignored_fields;        // key fields allowed to differ
  std::vector<EnvironmentField> environment;      // of the runs used on each side
  std::vector<ComparisonRow> rows;                // in order of first appearance in A
  std::vector<std::string> only_in_a, only_in_b;  // settings without a partner
  std::vector<std::string> notes;

  size_t count(Verdict verdict) const;
  // What plumb compare's exit status reports: some row of one precision is kSlower.
  bool slowdown_found() const;
};

// Reads both sides (read-only) and compares them. Throws UsageError, with one actionable line,
// for: an unreadable or non-plumb database; an unknown run id; a filter that selects no runs
// (naming the values that exist); both sides selecting the same runs; no setting present on
// both sides (naming what each side has); explicit runs of different workloads or modes; out
// of range statistics options.
Comparison compare_sources(const ComparisonRequest& request);

// The document plumb compare --json prints (fields in docs/json.md).
nlohmann::ordered_json comparison_json(const Comparison& comparison);

}  // namespace plumb::analysis
