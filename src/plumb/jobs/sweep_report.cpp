// plumb sweep's reporters (see sweep_report.h).
#include "plumb/jobs/sweep_report.h"

#include <fmt/format.h>

#include "plumb/report/text_table.h"

namespace plumb::jobs {

nlohmann::ordered_json sweep_job_json(const SweepJobResult& r) {
  nlohmann::ordered_json out;
  out["sweep"] = r.name;
  out["workload"] = r.workload;
  out["points"] = r.points;
  out["shard"] = fmt::format("{}/{}", r.shard.index, r.shard.count);
  out["skipped"] = r.skipped;
  out["ran"] = r.finished.size();
  out["failures"] = r.failures;
  out["seconds"] = r.seconds;
  out["warmup_seconds"] = r.warmup_seconds;
  out["measure_seconds"] = r.measure_seconds;
  out["finished"] = nlohmann::ordered_json::array();
  for (const auto& p : r.finished)
    out["finished"].push_back(
        {{"key", p.key}, {"status", p.status}, {"params", p.params}, {"metrics", p.metrics}});
  return out;
}

void print_sweep(std::ostream& out, const SweepJobResult& r) {
  using report::format_seconds;
  out << fmt::format(
      "sweep '{}': ran {} point(s) in {} ({} warm-up, {} measurement, {} building, costing and "
      "storing), {} failed; {} were already stored. Stored in {}\n",
      r.name, r.finished.size(), format_seconds(r.seconds), format_seconds(r.warmup_seconds),
      format_seconds(r.measure_seconds),
      format_seconds(r.seconds - r.warmup_seconds - r.measure_seconds), r.failures, r.skipped,
      r.db_path);
}

}  // namespace plumb::jobs
