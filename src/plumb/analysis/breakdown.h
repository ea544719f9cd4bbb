// Fathom-style breakdowns of an operator profile (pure functions over stored records):
// where the step's time goes by operator, category or layer, how concentrated it is
// (cumulative curve, Fathom Fig. 2), how training and inference differ (Fig. 5), and how each
// category scales with threads (Fig. 6, Amdahl fits).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "plumb/profile/op_profile.h"

namespace plumb::analysis {

enum class GroupBy { kOp, kCategory, kLayer };
// "op" | "category" | "layer"; throws UsageError naming the valid values otherwise.
GroupBy parse_group_by(const std::string& text);

// The row an operator statistic belongs to: its name (" (backward)" appended in the backward
// pass), its category ("uncosted" for uncosted leaf operators), or its layer ("(no layer)").
std::string group_key(const profile::OpStat& op, GroupBy by);

struct BreakdownRow {
  std::string name;         // op name, category name, or layer ("(no layer)" when none)
  double time_s = 0;        // self time per step
  double time_share = 0;    // time_s / step time (so rows + overhead sum to 1)
  double calls = 0;         // per step
  double flops = 0;         // per step, costed operators only
  double bytes = 0;         // bytes read + written per step
  double gflops_per_s = 0;  // flops / time_s / 1e9 (0 when time is 0)
  double gbytes_per_s = 0;
  double intensity = 0;        // flops / bytes (FLOPs per byte; 0 when bytes is 0)
  double uncosted_time_s = 0;  // part of time_s spent in uncosted leaf operators
};

struct Breakdown {
  std::vector<BreakdownRow> rows;  // sorted by time_s, descending
  double step_s = 0;
  double op_time_s = 0;                   // sum of rows' time_s
  double overhead_s = 0;                  // step_s - op_time_s (framework time outside operators)
  double uncosted_time_s = 0;             // total time in uncosted leaf operators
  double uncosted_share = 0;              // uncosted_time_s / step_s
  std::vector<std::string> uncosted_ops;  // names of uncosted leaf operators, by time
};

// Groups `profile.ops`. In category view, time of uncosted leaf operators is additionally
// reported as its own row named "uncosted" (its time is not also counted in another row).
Breakdown breakdown(const profile::StepProfile& profile, GroupBy by);

// Share of operator self time (framework overhead left out, so the shares sum to 1; empty
// without operator time) per category, every kind of operator in its own category — a row of
// Fathom's Fig. 3 and a similarity vector.
std::map<std::string, double> category_shares(const profile::StepProfile& profile);
// The same per operator type: operator name, forward and backward calls merged (as in
// cumulative_curve).
std::map<std::string, double> op_type_shares(const profile::StepProfile& profile);

// Fathom Fig. 2: operator types (by name, forward and backward merged) sorted by time, with
// their cumulative share of operator time; `count_for_90` = how many types cover 90%.
struct CumulativeCurve {
  std::vector<std::string> names;
  std::vector<double> share;       // each type's share of operator time
  std::vector<double> cumulative;  // running sum, ends at 1
  size_t count_for_90 = 0;
};
CumulativeCurve cumulative_curve(const profile::StepProfile& profile);

// Fathom Fig. 5: training vs inference of the same workload.
struct ModeComparison {
  double train_step_s = 0, infer_step_s = 0;
  double step_ratio = 0;  // train / infer
  // Per category: share of operator time in each mode (categories present in either).
  std::map<std::string, std::pair<double, double>> category_share;  // {train, infer}
};
ModeComparison compare_modes(const profile::StepProfile& train, const profile::StepProfile& infer);

// Fathom Fig. 6 / Amdahl: the same workload profiled at several thread counts.
struct ScalingFit {
  std::string name;             // category name, or "step" for the whole step
  std::vector<int> threads;     // ascending
  std::vector<double> time_s;   // per thread count
  std::vector<double> speedup;  // time at the smallest count / time at each count
  double serial_fraction = 0;   // least-squares Amdahl fit, clamped to [0, 1]
  double r_squared = 0;         // of the fit on the speedups (1 when exact)
};
// Fits time(p) = t1 * (f + (1 - f) * p1 / p) where p1 is the smallest thread count.
// Needs >= 2 distinct thread counts (throws UsageError otherwise).
ScalingFit fit_amdahl(const std::string& name, const std::vector<int>& threads,
                      const std::vector<double>& time_s);
// One fit per category present at every thread count, plus "step".
std::vector<ScalingFit> thread_scaling(const std::vector<int>& threads,
                                       const std::vector<profile::StepProfile>& profiles);

}  // namespace plumb::analysis
