// plumb gemm as a job: the GEMM shapes the workloads really run (Facebook inference paper,
// Fig. 5-6), taken from their operator profiles (convolutions as their im2col GEMMs), set
// against a square HPC shape, and each measured per precision on the fastest engine the linked
// libraries offer; int8 with 16-bit accumulation and the outlier split, which no library here
// runs, gets its exact error emulated and no speed. The reporters are in gemm_report.h.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "plumb/analysis/gemm_census.h"
#include "plumb/core/gemm_shape.h"
#include "plumb/platform/gemm_peaks.h"
#include "plumb/platform/int8_acc16.h"
#include "plumb/profile/op_profile.h"
#include "plumb/run/runner.h"

namespace plumb::jobs {

struct GemmJobOptions {
  std::vector<run::RunOptions> plan;  // one per workload and mode, validated
  std::vector<std::string> dtypes;    // the precisions each shape is measured in
  size_t top = 12;                    // shapes measured, largest share of time first
  double seconds = 0.2;               // timing budget per shape and precision
  int64_t square = 1024;              // side of the square reference GEMM
  bool from_db = false;               // reuse the newest stored profile where there is one
  int steps = 1;                      // observed steps per profile pass
  platform::Acc16Options acc16;
  int threads = 1;  // the shapes are timed at this intra-op thread count
  std::string db, tag;
};

// The profile one workload's shapes were read from.
struct GemmProfileSource {
  std::string workload, mode;
  int64_t batch = 0;
  int64_t profile_id = 0;
  bool reused = false;  // read from the store, not measured now
  profile::StepProfile profile;
};

struct GemmResult {
  int threads = 1;
  std::vector<std::string> dtypes;
  double seconds = 0;
  platform::Acc16Options acc16_options;
  std::vector<GemmProfileSource> sources;  // the passes that succeeded
  bool profile_failed = false;             // some pass failed: no shapes from it
  analysis::GemmCensus census;
  GemmShape square;
  std::map<std::string, platform::GemmPeak> square_rates;  // by dtype
  size_t measured = 0;                                     // leading census rows measured
  std::vector<std::vector<platform::GemmPeak>> rates;      // [row][dtype], `measured` rows
  bool with_int8 = false;
  std::vector<std::optional<platform::Acc16Error>> acc16;  // [row], with int8 only
};

// Profiles (or reads) every setting of the plan, takes the census of their GEMM shapes, and
// times the leading ones and the square reference. Progress lines go to `progress`.
GemmResult run_gemm_job(const GemmJobOptions& options, const run::ProgressFn& progress);

}  // namespace plumb::jobs
