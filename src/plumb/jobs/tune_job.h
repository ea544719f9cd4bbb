// plumb tune as a job: how much faster a workload runs on this machine than its stock
// configuration, with settings that keep what it computes (threads, precision within an error
// budget, memory format, engine, heap, batch within a latency bound), and which change bought
// what. Sequence: the output error of each allowed precision against fp32 -> the space ->
// successive halving within the budget (analysis/tune_search.h) -> contribution trials (each
// differing factor alone from stock, and removed from best) -> stock and best measured to
// steady state, alternately, `replicates` times each (stored runs) -> the speedup with plumb
// compare's interval -> the best's place under the roof of its precision. The result is typed
// (store/tune_result.h) and stored; tune_report.h prints it. Method and figures: docs/tuning.md.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "plumb/core/dtype.h"
#include "plumb/core/mode.h"
#include "plumb/core/workload.h"
#include "plumb/run/runner.h"
#include "plumb/store/results_store.h"
#include "plumb/store/tune_record.h"

namespace plumb::jobs {

// A factor whose removal from the best costs less than this fraction of throughput in the
// contribution trials made no difference beyond trial noise: the best reverts it to stock, so
// the configuration reported changes only what matters.
inline constexpr double kTuneNoDifference = 0.02;

struct TuneOptions {
  const Workload* workload = nullptr;
  run::RunOptions stock;          // the configuration every speedup is over
  std::vector<Dtype> candidates;  // precisions the search may use (tune_candidate_dtypes)
  double budget_s = 600;          // the search's wall time
  double max_error = 0.02;        // largest output error against fp32 a precision may add
  double latency_bound_s = 0;     // > 0: the batch is searched within this mean step time
  size_t replicates = 3;          // steady-state runs of each of stock and best
  std::string tag;
};

// The precisions named in `listed` (a --dtypes list), or by default every precision the mode
// can run (training autocasts to bf16 only).
std::vector<Dtype> tune_candidate_dtypes(const std::string& listed, Mode mode);

// Runs the session and stores it (with the final runs) in `db`; returns it with its id.
// found is false, with the message saying why, when no configuration meets the error budget or
// the latency bound (the closest is in the result) or the final runs cannot be compared.
store::StoredTuneSession run_tune(const TuneOptions& options, store::ResultsStore& db);

}  // namespace plumb::jobs
