// plumb precision as a job: what each precision buys (speed against fp32, same steady-state
// method, with the ratio's bootstrap interval) and what it costs (output error against fp32 on
// the same inputs and weights, run/error_against_fp32.h), per workload; with --by layer, the
// error each int8 layer adds alone and the selective-quantization plan within the error budget,
// measured. Every run and comparison is stored. The reporters are in precision_report.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "plumb/analysis/run_comparison.h"
#include "plumb/core/workload.h"
#include "plumb/jobs/selective_int8_plan.h"
#include "plumb/run/int8_quantizer.h"
#include "plumb/run/output_error.h"
#include "plumb/run/runner.h"
#include "plumb/store/results_store.h"
#include "plumb/store/run_record.h"

namespace plumb::jobs {

struct PrecisionJobOptions {
  const Workload* workload = nullptr;
  Config config;
  Mode mode = Mode::kInfer;
  std::vector<run::RunOptions> plan;  // one per precision, validated; fp32 is added first
  bool by_layer = false;              // also the per-layer int8 error and the selective plan
  double max_error = 0.02;            // the plan's error budget
  size_t max_plan_steps = 8;          // layers the plan may keep in fp32
  std::string db, tag;
};

struct PrecisionRow {
  store::StoredRun run;
  bool error_measured = false;
  std::string error_note;  // why no error, when not measured
  run::OutputError error;
  analysis::ThroughputComparison speed;  // against fp32
};

struct MeasuredSelectivePlan {
  SelectiveInt8Plan search;
  std::optional<store::StoredRun> run;   // the plan timed and stored
  analysis::ThroughputComparison speed;  // of run against fp32, when it ran
};

struct PrecisionResult {
  std::string workload, throughput_unit;
  Mode mode = Mode::kInfer;
  int64_t batch = 0;
  int threads = 1;
  MemoryFormat memory_format = MemoryFormat::kContiguous;
  std::vector<PrecisionRow> rows;  // fp32 first
  std::vector<run::WeightOutliers> outliers;
  bool by_layer = false;
  double max_error = 0;
  std::optional<MeasuredSelectivePlan> plan;  // by layer, when fp32's outputs were captured
  bool runs_failed = false;  // a run (the plan's included) failed other than unsupported
  std::string db_path;
};

// Times fp32 and each precision, measures their output error, stores runs and comparisons.
// Throws UsageError when the fp32 reference run fails.
PrecisionResult run_precision_job(const PrecisionJobOptions& options);

}  // namespace plumb::jobs
