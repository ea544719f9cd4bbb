// plumb analyze fusion as a job: fusion opportunities mined from the operator graphs of stored
// profiles (Facebook paper Sec. 3.3), ranked by the saving projected on this machine's roofs,
// and realized where LibTorch has a fused kernel: the fused kernel is timed against the unfused
// sequence on the recorded shapes (profile/fused_kernels.h) and the check stored. A workload
// without a stored profile of the mode and precision is profiled first. The reporters are in
// fusion_report.h.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "plumb/analysis/fusion_mining.h"
#include "plumb/analysis/fusion_realized.h"
#include "plumb/analysis/profile_roofline.h"
#include "plumb/run/runner.h"
#include "plumb/store/profile_records.h"
#include "plumb/store/results_store.h"

namespace plumb::jobs {

struct FusionJobOptions {
  std::vector<run::RunOptions> plan;  // one per workload, validated
  std::string mode;                   // as the user spelled it (the JSON's "mode")
  int top = 10;                       // patterns shown, and realized, per workload
  int steps = 3;                      // observed steps when profiling
  analysis::FusionOptions mining;
  // The compute roof, and its name as the user spelled it ("instruction" or "gemm").
  analysis::PeakKind peak_kind = analysis::PeakKind::kGemm;
  std::string peak = "gemm";
  bool profile = false;     // profile now even with a stored profile
  bool no_realize = false;  // skip the fused-kernel checks
  double check_seconds = 1.0;
  std::string db, tag;
};

// A pattern's realized check, when one was measured.
struct FusionRealized {
  store::StoredFusedKernelCheck stored;
  analysis::RealizedFusion comparison;
};

// One workload's mining, with what it was mined from, and the checks that realize its patterns
// (by pattern key).
struct FusionWorkload {
  std::string workload, mode, dtype;
  int64_t profile_id = 0, batch = 0;
  int threads = 1;
  analysis::FusionMining mining;
  std::map<std::string, FusionRealized> realized;
};

struct FusionResult {
  std::string mode;
  int64_t probe_id = 0;
  std::string peak;
  int max_nodes = 0, min_count = 0;
  size_t top = 0;
  std::vector<FusionWorkload> workloads;  // those with a graph to mine
  bool profile_failed = false;            // a profile measured now failed: nothing mined from it
  // Across the workloads (merged patterns) and their checks, first workload's check first.
  std::vector<analysis::FusionPattern> suite;
  std::map<std::string, FusionRealized> suite_realized;
};

// Mines every workload of the plan, realizes the top patterns (and the first of every kind
// further down) and stores what it measured. Progress lines go to `progress`. Throws
// UsageError before anything is measured or written when a stored profile predates graph
// capture.
FusionResult run_fusion_job(const FusionJobOptions& options, const run::ProgressFn& progress);

}  // namespace plumb::jobs
