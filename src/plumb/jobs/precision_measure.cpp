// Measuring a precision against fp32 (see precision_measure.h).
#include "plumb/jobs/precision_measure.h"

#include <iostream>
#include <limits>

#include <fmt/format.h>

#include "plumb/platform/environment.h"
#include "plumb/store/precision_records.h"
#include "plumb/store/run_record.h"

namespace plumb::jobs {

store::StoredRun time_and_store(const Workload& w, const run::RunOptions& o,
                                store::ResultsStore& db, const std::string& tag) {
  std::cerr << fmt::format("timing {} {} {} batch {} threads {} ...\n", w.info.name,
                           mode_name(o.mode), dtype_name(o.dtype), o.config.get_int("batch"),
                           o.threads);
  const auto env = platform::capture_environment(o.threads, o.device);
  const auto result =
      run::run_workload(w, o, [](const std::string& line) { std::cerr << "  " << line << '\n'; });
  for (const auto& warning : result.warnings) std::cerr << "  warning: " << warning << '\n';
  const int64_t id = db.save_run(o, result, env, tag);
  return *db.load_run(id, /*with_samples=*/true);
}

analysis::ThroughputComparison speed_against(const store::StoredRun& fp32,
                                             const store::StoredRun& other) {
  analysis::SideSamples a{{fp32.result.samples_s}, {fp32.result.units_per_step}, {}};
  analysis::SideSamples b{{other.result.samples_s}, {other.result.units_per_step}, {}};
  return analysis::compare_throughput(a, b, analysis::ComparisonOptions{});
}

void save_precision_comparison(store::ResultsStore& db, const store::StoredRun& run,
                               const store::StoredRun& fp32,
                               const analysis::ThroughputComparison& speed, bool error_measured,
                               const run::OutputError& error, const std::string& note) {
  store::PrecisionComparisonRecord rec;
  rec.run_id = run.id;
  rec.reference_run_id = fp32.id;
  rec.speedup = speed.ratio;
  rec.speedup_low = speed.ci_low;
  rec.speedup_high = speed.ci_high;
  rec.error_measured = error_measured;
  if (error_measured) {
    rec.error = error;
  } else {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    rec.error.relative_l2 = rec.error.max_abs = rec.error.cosine = rec.error.agreement = nan;
  }
  rec.note = note;
  db.save_precision_comparison(rec);
}

}  // namespace plumb::jobs
