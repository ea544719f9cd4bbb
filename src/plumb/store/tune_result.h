// What one `plumb tune` call found, typed: the output error of each precision, the space, the
// search, the contributions, stock and best with the speedup, and the headroom under the roof
// (docs/tuning.md). It is what the tune job returns, what the report reads, and, through
// to_json/from_json below, the `json` column of tune_sessions and `plumb tune --json` (without
// the id), key for key and in the same order as the document the command always wrote, so
// stored sessions read back unchanged. A key an older plumb did not write reads as its default.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "plumb/run/tune_point.h"

namespace plumb::store {

// One precision's output error against fp32 (run/error_against_fp32.h), checked before the
// search: only precisions within --max-error are searched.
struct TunePrecisionError {
  std::string dtype;
  double error = NAN;  // NaN (null): not measured, `note` says why
  std::string measure;
  bool allowed = false;
  std::string note;  // "" when there is nothing to say (not written)
  // A generative model's logits relative L2 beside its token mismatch (OutputError's
  // measured_on "logits"); NaN otherwise (not written).
  double logits_relative_l2 = NAN;
};

struct TuneSpaceSummary {
  std::vector<run::TuneFactor> factors;
  size_t points = 0;
  std::vector<std::string> not_searched;
};

struct TuneRungSummary {
  size_t steps = 0, points = 0;
  double seconds = 0;
};

struct TuneSearchSummary {
  // False when the precision check left nothing to search: then only trials, seconds (both 0)
  // and stop_reason are written.
  bool started = false;
  std::string method;
  size_t eta = 0, first_steps = 0;
  std::vector<TuneRungSummary> rungs;
  size_t trials = 0;
  double seconds = 0;
  std::string stop_reason;
  size_t not_measured = 0;
  std::string best;  // the search's best point before unneeded changes were reverted; "": none
};

// The point nearest a latency bound nobody met.
struct TuneClosest {
  std::string setting;
  double step_s = NAN;
  std::string command;
};

// One factor where the search's best differs from stock: throughput ratios from short trials.
struct TuneContribution {
  std::string factor, stock, best;
  double alone_from_stock = NAN;                        // stock with this change over stock
  double removed_from_best = NAN;                       // best without it over best
  std::optional<std::string> alone_note, removed_note;  // why a trial failed
  bool reverted = false;  // made no difference beyond trial noise: the best keeps stock's value
};

struct TuneRunOptions {
  int threads = 0;
  std::string dtype, memory_format, engine, heap;
  int64_t batch = 0;
};

// Where one more steady-state run is expected to land (run/statistic_registry.h's prediction
// interval); NaN bounds with a note when the between-run spread is unknown.
struct TuneInterval {
  double low = NAN, high = NAN;
  std::string note;
};

// Stock or best, measured to steady state by stored runs.
struct TuneSide {
  std::string setting;
  TuneRunOptions options;
  std::string command;
  std::vector<int64_t> run_ids;
  double throughput = NAN;                          // mean over the ok runs
  std::optional<TuneInterval> interval_of_one_run;  // the best's only
};

struct TuneSpeedup {
  double ratio = NAN, ci_low = NAN, ci_high = NAN;
  std::string verdict, reason;
  double between_run_sd = NAN;
};

// One side's place under the compute roof of its precision.
struct TuneRoof {
  std::string dtype;
  double achieved_flops = NAN;
  double roof_flops = NAN;
  std::string roof_source;
  double roof_fraction = NAN;
  std::optional<std::string> roof_note;  // set: the probe has no roof for it (no source, fraction)
};

struct TuneHeadroom {
  std::string note;  // not "": the headroom is unknown, and why (nothing else is written)
  double flops_per_unit = NAN;
  int64_t probe_id = 0;
  TuneRoof stock, best;
};

// Stock and best measured to steady state, and what each change contributed.
struct TuneFinal {
  std::vector<TuneContribution> contributions;
  std::string most;  // the change the best loses the most without; "" (null): none
  TuneSide stock, best;
  TuneSpeedup speedup;
};

struct TuneResult {
  std::string workload, mode;
  int64_t batch = 0;
  int threads = 0;
  std::string unit;
  double budget_s = 0, max_error = 0;
  double latency_bound_s = 0;  // 0 (null): no bound
  std::vector<TunePrecisionError> precision_errors;
  TuneSpaceSummary space;
  TuneSearchSummary search;
  std::optional<TuneClosest> closest;
  std::optional<TuneFinal> final_runs;  // set once stock and best were measured
  std::optional<TuneHeadroom> headroom;
  bool found = false;
  std::string message;  // why nothing was found; "" when found (not written)

  // The best's setting, "" when no best was measured.
  std::string best_setting() const { return final_runs ? final_runs->best.setting : ""; }
};

void to_json(nlohmann::ordered_json& j, const TuneResult& r);
void from_json(const nlohmann::ordered_json& j, TuneResult& r);

}  // namespace plumb::store
