// A sweep point's metrics and status (see sweep_point_metrics.h).
#include "plumb/analysis/sweep_point_metrics.h"

#include <cmath>

#include <fmt/format.h>

#include "plumb/analysis/breakdown.h"
#include "plumb/core/json_number.h"

namespace plumb::analysis {

nlohmann::ordered_json sweep_point_metrics(const profile::SweepPointMeasurement& point,
                                           const std::optional<Ceilings>& ceilings) {
  nlohmann::ordered_json m = nlohmann::ordered_json::object();
  const run::RunResult& r = point.run;
  if (r.status == run::RunStatus::kOk) {
    // The median step: on a 2-core VM, small steps show a heavy tail (p95 up to 15x the
    // median when LibTorch's OpenMP pool and OpenBLAS's threads contend) that moves the mean
    // by several times between neighbouring points; the median is the steady step.
    const double step = r.step_time.median;
    const double batch = static_cast<double>(point.options.config.get_int("batch"));
    m["examples_per_s"] = batch / step;
    m["throughput"] = r.throughput;
    m["throughput_unit"] = r.throughput_unit;
    m["step_s"] = step;
    m["step_mean_s"] = r.step_time.mean;
    m["ci_rel"] = json_number(r.step_time.ci_rel);
    m["flops_per_step"] = point.flops_per_step;
    m["flops_per_s"] = point.flops_per_step / step;
    // Against the roof of the point's own precision (bf16 and int8 have theirs); none when
    // the probe found no engine for it.
    double roof_flops = 0;
    if (ceilings) {
      const auto roof = ceilings->by_dtype.find(dtype_name(point.options.dtype));
      if (roof != ceilings->by_dtype.end()) roof_flops = roof->second.flops;
    }
    m["flops_util"] = roof_flops > 0 ? json_number(point.flops_per_step / step / roof_flops)
                                     : nlohmann::ordered_json();
    m["params"] = point.params;
    m["steady_detected"] = r.steady_detected;
    m["target_met"] = r.target_met;
  }
  if (point.memory && point.memory->status == run::RunStatus::kOk) {
    m["total_peak_bytes"] = point.memory->breakdown.total_peak;
    for (size_t c = 0; c < profile::kMemoryCategoryCount; ++c)
      m[std::string(profile::category_key(profile::category_at(c))) + "_bytes"] =
          point.memory->breakdown.peak[c];
  }
  if (point.ops && point.ops->status == run::RunStatus::kOk) {
    // The cost model's work of one observed step, over the run's median step time: the
    // point's place on the roofline (plumb analyze roofline).
    const auto b = breakdown(point.ops->profile, GroupBy::kCategory);
    double flops = 0, bytes = 0;
    for (const auto& row : b.rows) {
      flops += row.flops;
      bytes += row.bytes;
      m["share_" + row.name] = json_number(row.time_share);
    }
    m["profile_flops_per_step"] = flops;
    m["bytes_per_step"] = bytes;
    m["intensity"] = json_number(bytes > 0 ? flops / bytes : std::nan(""));
    m["uncosted_share"] = json_number(b.uncosted_share);
  }
  return m;
}

Outcome sweep_point_status(const profile::SweepPointMeasurement& point, double point_time_limit_s) {
  if (point.run.status == run::RunStatus::kOk && point_time_limit_s > 0 &&
      point.wall_s > point_time_limit_s)
    return Outcome::failure(
        OutcomeState::kTimeout,
        fmt::format("the point took {:.1f} s, over the point_time_limit of {} s (its "
                    "measurements are kept)",
                    point.wall_s, point_time_limit_s));
  return {point.run.status, point.run.message};
}

}  // namespace plumb::analysis
