// The findings of one workload, from its stored records (see workload_findings.h).
#include "plumb/analysis/workload_findings.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "plumb/analysis/breakdown.h"
#include "plumb/analysis/phase_profile.h"
#include "plumb/analysis/profile_roofline.h"
#include "plumb/core/errors.h"
#include "plumb/core/ratio_interval.h"
#include "plumb/core/text.h"
#include "plumb/platform/environment.h"
#include "plumb/store/precision_records.h"
#include "plumb/store/probe_record.h"
#include "plumb/store/profile_records.h"

namespace plumb::analysis {
namespace {

std::string percent(double share) {
  return std::isfinite(share) ? fmt::format("{:.0f}%", share * 100) : "an unknown share";
}

Shares sorted_shares(const std::map<std::string, double>& shares) {
  Shares out(shares.begin(), shares.end());
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

// "compute-bound at 92% of the fp32 roof", "memory-bound at 74% of the DRAM bandwidth".
std::string roof_clause(const std::string& bound, double roof_fraction, const std::string& roof) {
  const std::string kind = bound == "compute" ? "compute-bound" : "memory-bound";
  // Above the roof: a kernel faster than the probe's (e.g. Winograd convolution does fewer
  // FLOPs than the cost model counts) or a roof measured low; the placement still holds.
  return fmt::format("{} at {} of the {}{}", kind, percent(roof_fraction), roof,
                     roof_fraction > 1.02 ? " (above the probed roof)" : "");
}

// A generation's prompt length from a stored config: gpt2's and llama's prompt, ParaDnn's
// transformer's context; 0 when it names none.
double stored_prompt_length(const nlohmann::ordered_json& config) {
  for (const char* key : {"prompt", "context"}) {
    const auto it = config.find(key);
    if (it != config.end() && it->is_number()) return it->get<double>();
  }
  return 0;
}

PhaseFinding phase_finding(const store::StoredProfile& stored, const PhaseTime& t,
                           const Ceilings* ceilings) {
  PhaseFinding f;
  f.phase = t.phase;
  f.calls = t.calls;
  const auto batch = static_cast<double>(stored.batch);
  f.tokens =
      t.phase == Phase::kDecode ? batch * t.calls : batch * stored_prompt_length(stored.config);
  const profile::StepProfile phase = phase_profile(stored.result.profile, t.phase);
  const WorkItem whole = step_item(phase, phase_name(t.phase));
  const double per = f.tokens > 0 ? f.tokens : t.calls;
  f.bytes_per_token = per > 0 ? whole.bytes / per : 0;
  f.flops_per_token = per > 0 ? whole.flops / per : 0;
  if (ceilings == nullptr) {
    f.clause = "not placed: no ceilings of this machine stored (plumb probe --quick)";
    return f;
  }
  const Placement p = place(whole, *ceilings);
  f.bound = p.bound;
  f.roof_fraction = p.roof_fraction;
  f.roof = roof_words(p, *ceilings);
  f.clause = p.bound == "overhead" ? fmt::format("bound by overhead, reaching only {} of its {}",
                                                 percent(p.roof_fraction), f.roof)
                                   : roof_clause(p.bound, p.roof_fraction, f.roof);
  return f;
}

// "step", or "operator time" when operators overlapped on several threads.
const char* share_of(const BoundFinding& f) {
  return f.concurrency > 0 ? "operator time" : "step";
}

// The time the shares of a step are taken of: its wall time, or its operator time when
// operators ran on several threads at once and add up to more than the wall time.
double share_base(const Breakdown& b) {
  return std::max(b.step_s, b.op_time_s);
}

std::string clause_for_top(const BoundFinding& f) {
  const std::string head =
      fmt::format("{} takes {} of the {}", f.category, percent(f.category_share), share_of(f));
  if (f.category == "uncosted")
    return head + " in operators the cost model has no FLOP/byte rule for, so it is not placed";
  if (f.bound.empty()) return head;
  if (f.bound == "overhead")
    return fmt::format(
        "{} and reaches only {} of its {}: bound by overhead (dispatch, latency or too little "
        "work per call), not by the hardware",
        head, percent(f.roof_fraction), f.roof);
  return fmt::format("{}, {}", head, roof_clause(f.bound, f.roof_fraction, f.roof));
}

}  // namespace

Shares category_time_shares(const profile::StepProfile& profile) {
  const Breakdown b = breakdown(profile, GroupBy::kCategory);
  const double base = share_base(b);
  Shares out;
  if (base <= 0) return out;
  for (const auto& row : b.rows) out.emplace_back(row.name, row.time_s / base);
  if (b.overhead_s > 0) out.emplace_back("framework overhead", b.overhead_s / base);
  return out;
}

const store::StoredProbe* newest_probe_of(const platform::Environment& environment,
                                          const std::vector<store::StoredProbe>& probes) {
  const store::StoredProbe* newest = nullptr;  // probes come in id order
  const std::string machine = platform::machine_key(environment);
  for (const auto& candidate : probes)
    if (candidate.machine == machine) newest = &candidate;
  return newest;
}

std::optional<Ceilings> profile_ceilings(const store::StoredProfile& profile,
                                         const std::vector<store::StoredProbe>& probes) {
  const store::StoredProbe* newest = newest_probe_of(profile.environment, probes);
  if (newest == nullptr) return std::nullopt;
  try {
    return ceilings_from_probe(newest->document, "fp32", profile.threads, PeakKind::kInstruction);
  } catch (const UsageError&) {
    return std::nullopt;  // no fp32 roof or no bandwidth levels on this probe
  }
}

BoundFinding bound_finding(const profile::StepProfile& profile, const Ceilings* ceilings) {
  BoundFinding f;
  const Breakdown by_category = breakdown(profile, GroupBy::kCategory);
  if (by_category.rows.empty() || by_category.step_s <= 0) {
    f.sentence = "no operator time recorded";
    return f;
  }
  const BreakdownRow& top = by_category.rows.front();
  const double base = share_base(by_category);
  if (by_category.op_time_s > by_category.step_s * 1.05)
    f.concurrency = by_category.op_time_s / by_category.step_s;
  f.category = top.name;
  f.category_share = top.time_s / base;
  f.overhead_share = std::max(0.0, by_category.overhead_s / base);

  // Each operator type placed on its own, and the category each belongs to.
  std::map<std::string, std::string> category_of;  // op group key -> category row
  for (const auto& op : profile.ops)
    category_of.emplace(group_key(op, GroupBy::kOp), group_key(op, GroupBy::kCategory));
  std::vector<WorkItem> top_items;
  std::map<std::string, double> memory_bound_time;  // other categories, seconds per step
  for (const WorkItem& item : work_items(profile, GroupBy::kOp)) {
    const std::string& category = category_of[item.name];
    if (category == f.category) {
      top_items.push_back(item);
    } else if (ceilings != nullptr && (item.flops > 0 || item.bytes > 0)) {
      const Placement p = place(item, *ceilings);
      if (p.bound.rfind("memory:", 0) == 0) memory_bound_time[category] += item.seconds;
    }
  }
  for (const auto& [category, seconds] : sorted_shares(memory_bound_time)) {
    f.memory_bound_share += seconds / base;
    if (f.memory_bound_categories.size() < 2) f.memory_bound_categories.push_back(category);
  }

  std::vector<std::string> clauses;
  if (f.concurrency > 0)
    clauses.push_back(fmt::format(
        "operators ran on several threads at once ({:.1f}x the step's wall time), so shares are "
        "of operator time",
        f.concurrency));
  if (ceilings != nullptr && f.category != "uncosted") {
    WorkItem whole = sum_items(top_items, f.category);
    // The category computes in the dtype of its heaviest operator.
    const auto heaviest =
        std::max_element(top_items.begin(), top_items.end(),
                         [](const WorkItem& a, const WorkItem& b) { return a.flops < b.flops; });
    if (heaviest != top_items.end()) whole.dtype = heaviest->dtype;
    if (whole.flops > 0 || whole.bytes > 0) {
      const Placement p = place(whole, *ceilings);
      f.bound = p.bound;
      f.roof_fraction = p.roof_fraction;
      f.roof = roof_words(p, *ceilings);
    }
    const Placement step = place(step_item(profile, "step"), *ceilings);
    f.step_utilisation = step.utilisation;
  }
  clauses.push_back(clause_for_top(f));
  if (f.memory_bound_share >= 0.05)
    clauses.push_back(fmt::format("{} of the {} in memory-bound {}", percent(f.memory_bound_share),
                                  share_of(f), join(f.memory_bound_categories, " and ")));
  if (f.overhead_share >= 0.05)
    clauses.push_back(
        fmt::format("{} framework time outside operators", percent(f.overhead_share)));
  if (ceilings == nullptr)
    clauses.push_back("no ceilings of this machine stored to place it on (plumb probe --quick)");
  f.sentence = join(clauses, "; ");
  return f;
}

std::vector<PhaseFinding> phase_findings(const store::StoredProfile& profile,
                                         const Ceilings* ceilings) {
  std::vector<PhaseFinding> out;
  for (const auto& t : phase_times(profile.result.profile))
    out.push_back(phase_finding(profile, t, ceilings));
  return out;
}

Shares top_operator_types(const profile::StepProfile& profile, size_t n) {
  Shares all = sorted_shares(op_type_shares(profile));
  if (all.size() > n) all.resize(n);
  return all;
}

Shares memory_mix(const profile::MemoryBreakdown& breakdown) {
  std::map<std::string, double> shares;
  if (breakdown.total_peak <= 0) return {};
  for (size_t c = 0; c < profile::kMemoryCategoryCount; ++c)
    if (breakdown.at_total_peak[c] > 0)
      shares[profile::category_key(profile::category_at(c))] =
          static_cast<double>(breakdown.at_total_peak[c]) /
          static_cast<double>(breakdown.total_peak);
  return sorted_shares(shares);
}

std::string precision_gain_text(const store::PrecisionComparisonRecord& c) {
  const RatioInterval speed{c.speedup, c.speedup_low, c.speedup_high};
  std::vector<std::string> notes;
  if (speed.ratio_known() && !speed.interval_known()) notes.push_back("interval unknown");
  if (c.error_measured && c.error.agreement_kind == "token" && std::isfinite(c.error.agreement))
    notes.push_back(fmt::format("tokens {} agree", percent(c.error.agreement)));
  else if (c.error_measured && std::isfinite(c.error.relative_l2))
    notes.push_back(fmt::format("error {:.1e}", c.error.relative_l2));
  return fmt::format("{} {}{}", dtype_name(c.dtype),
                     speed.ratio_known() ? ratio_text(speed) : "speed not measured",
                     notes.empty() ? "" : " (" + join(notes, "; ") + ")");
}

std::string shares_text(const Shares& shares, size_t n) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < shares.size() && i < n; ++i)
    if (shares[i].second >= 0.005)  // a part that rounds to 0% says nothing
      parts.push_back(shares[i].first + " " + percent(shares[i].second));
  return join(parts, ", ");
}

}  // namespace plumb::analysis
