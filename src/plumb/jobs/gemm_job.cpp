// plumb gemm's work (see gemm_job.h): profiles, the census of their GEMM shapes, and the
// timings of the leading shapes and the square reference.
#include "plumb/jobs/gemm_job.h"

#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>

#include "plumb/core/clock.h"
#include "plumb/core/mode.h"
#include "plumb/jobs/stored_or_fresh_profile.h"
#include "plumb/run/thread_count.h"
#include "plumb/store/results_store.h"

namespace plumb::jobs {
namespace {

// One precision of one shape: the fastest supported engine, or why none runs it.
platform::GemmPeak fastest_gemm_engine(const std::string& dtype, const GemmShape& shape,
                                       int threads, double seconds) {
  std::vector<platform::GemmPeak> tried;
  // fp32 has two engines (OpenBLAS under LibTorch, oneDNN); the others run on oneDNN only.
  if (dtype == "fp32")
    tried.push_back(
        platform::measure_gemm(dtype, platform::GemmLibrary::kTorchMm, shape, threads, seconds));
  tried.push_back(
      platform::measure_gemm(dtype, platform::GemmLibrary::kOneDnn, shape, threads, seconds));
  platform::GemmPeak best = tried.back();
  for (const auto& t : tried)
    if (t.outcome.ok() && (!best.outcome.ok() || t.ops_per_s > best.ops_per_s)) best = t;
  return best;
}

// A profile per (workload, mode): the newest stored one with --from-db, else a new pass, stored.
void source_gemm_profiles(const GemmJobOptions& options, GemmResult& result,
                          const run::ProgressFn& progress) {
  auto db = store::ResultsStore::open(options.db);
  ProfileSourcing sourcing;
  sourcing.reuse_stored = options.from_db;
  sourcing.steps = options.steps;
  sourcing.group = fmt::format("gemm-{}-{}", utc_now_iso8601(), getpid());
  sourcing.tag = options.tag;
  for (const auto& o : options.plan) {
    SourcedProfile s = stored_or_fresh_profile(*db, o, sourcing, progress);
    if (s.result.status != run::RunStatus::kOk) {
      progress(fmt::format("  {} {}: {} ({}): no GEMM shapes from it", o.workload,
                           mode_name(o.mode), run::status_name(s.result.status), s.result.message));
      result.profile_failed = true;
      continue;
    }
    result.sources.push_back(
        {o.workload, mode_name(o.mode), s.batch, s.id, s.reused, std::move(s.result.profile)});
  }
}

// Measures the leading shapes and the square reference, at the run's thread count.
void time_gemm_shapes(const GemmJobOptions& options, GemmResult& result,
                      const run::ProgressFn& progress) {
  const run::ScopedThreadCount threads_for(options.threads);
  progress(fmt::format("square reference {} ...", result.square.text()));
  for (const auto& d : result.dtypes)
    result.square_rates.emplace(
        d, fastest_gemm_engine(d, result.square, options.threads, options.seconds));
  result.rates.resize(result.measured);
  result.acc16.resize(result.measured);
  for (size_t i = 0; i < result.measured; ++i) {
    const auto& shape = result.census.rows[i].shape;
    progress(fmt::format("measuring {} ({}/{}) ...", shape.text(), i + 1, result.measured));
    for (const auto& d : result.dtypes)
      result.rates[i].push_back(fastest_gemm_engine(d, shape, options.threads, options.seconds));
    if (result.with_int8) result.acc16[i] = platform::emulate_int8_acc16(shape, options.acc16);
  }
}

}  // namespace

GemmResult run_gemm_job(const GemmJobOptions& options, const run::ProgressFn& progress) {
  GemmResult result;
  result.threads = options.threads;
  result.dtypes = options.dtypes;
  result.seconds = options.seconds;
  result.acc16_options = options.acc16;
  source_gemm_profiles(options, result, progress);
  std::vector<analysis::GemmSource> inputs;
  for (const auto& s : result.sources) inputs.push_back({s.workload, s.mode, &s.profile});
  result.census = analysis::gemm_census(inputs);
  result.square = GemmShape{1, options.square, options.square, options.square};
  result.measured = std::min(options.top, result.census.rows.size());
  result.with_int8 =
      std::find(options.dtypes.begin(), options.dtypes.end(), "int8") != options.dtypes.end();
  time_gemm_shapes(options, result, progress);
  return result;
}

}  // namespace plumb::jobs
