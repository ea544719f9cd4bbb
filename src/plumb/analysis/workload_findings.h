// What a workload does to the machine, in the few numbers and one sentence a reader takes away
// (the report's workload cards and plumb characterize's summary): what bounds a profiled step
// and why (its dominant operator category placed on the measured roofs, the time other
// categories spend memory-bound, the framework's own time), the operator types that take the
// time, the mix of a step's memory at its peak, and what each reduced precision gained.
// Pure functions over stored records.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "plumb/analysis/roofline.h"
#include "plumb/core/generation.h"
#include "plumb/platform/environment.h"
#include "plumb/profile/memory_breakdown.h"
#include "plumb/profile/op_profile.h"
#include "plumb/store/precision_records.h"
#include "plumb/store/probe_record.h"
#include "plumb/store/profile_records.h"
#include "plumb/store/results_store.h"

namespace plumb::analysis {

// The newest of `probes` (in id order, as the store loads them) measured on the machine a record
// with `environment` ran on (platform::machine_key); nullptr when none.
const store::StoredProbe* newest_probe_of(const platform::Environment& environment,
                                          const std::vector<store::StoredProbe>& probes);

// The roofs a stored profile is placed on: the newest of `probes` measured on the profile's
// machine (platform::machine_key), its fp32 instruction peaks and bandwidths at the profile's
// thread count. nullopt when no probe of that machine is stored or it has no fp32 roof.
std::optional<Ceilings> profile_ceilings(const store::StoredProfile& profile,
                                         const std::vector<store::StoredProbe>& probes);

// A name and its share of a whole, largest first.
using Shares = std::vector<std::pair<std::string, double>>;

struct BoundFinding {
  std::string category;       // the operator category with the most self time
  double category_share = 0;  // of the step's wall time
  // The category's operators summed and placed on the roofs (roofline.h): "compute",
  // "memory:<level>" or "overhead"; "" when it cannot be placed (no ceilings, or the category
  // is the cost model's "uncosted" row, whose FLOPs and bytes are unknown).
  std::string bound;
  double roof_fraction = 0;  // achieved / the roof it is bound by (meaningful with a bound)
  std::string roof;          // that roof in words: "fp32 roof", "DRAM bandwidth"
  // Time of the other categories' operators that are memory-bound on their own, as a share of
  // the step, and those categories, most time first.
  double memory_bound_share = 0;
  std::vector<std::string> memory_bound_categories;
  double overhead_share = 0;  // framework time outside any operator, of the step
  // Operator time / step time when operators ran on several threads at once (a3c's actors):
  // the shares above are then of operator time, so that they still add up to 1. 0 otherwise.
  double concurrency = 0;
  double step_utilisation = -1;  // the step's FLOP/s over its dtype's peak; < 0 without roofs
  std::string sentence;          // all of the above for a reader, in one sentence
};

// `ceilings` may be null (no probe of the machine): the finding then names the dominant
// category and the overhead only, and says how to get the roofs.
BoundFinding bound_finding(const profile::StepProfile& profile, const Ceilings* ceilings);

// One phase of a generation (a generative model's inference profile, phase_profile.h): its costed
// work per token and the phase as one item on the roofs, placed as plumb roofline places it (its
// wall time per step, framework overhead included), for a card's "decode: reads 2.2 GiB per
// token, memory-bound at 74% of the DRAM bandwidth".
struct PhaseFinding {
  Phase phase = Phase::kPrefill;
  // Per step: a decode call makes one token per request (batch x calls); a prefill reads batch x
  // prompt tokens (config key prompt, or context for ParaDnn's transformer); 0 when the config
  // names no prompt length, and the figures below are then per call.
  double tokens = 0;
  double calls = 0;            // per step
  double bytes_per_token = 0;  // the phase's operator bytes per step / tokens (or per call)
  double flops_per_token = 0;  // the same for FLOPs
  std::string bound;           // "compute", "memory:<level>", "overhead"; "" without ceilings
  double roof_fraction = 0;    // achieved / that roof (bound_text's percentage)
  std::string roof;            // roof_words: "DRAM bandwidth", "fp32 roof"
  std::string clause;          // "memory-bound at 74% of the DRAM bandwidth"
};
// The phases the profile timed, in order; empty for a profile of no generation. `ceilings` may be
// null: the clause then says what to run for roofs.
std::vector<PhaseFinding> phase_findings(const store::StoredProfile& profile,
                                         const Ceilings* ceilings);

// Each category's share of the step's wall time (framework overhead as its own part), or of
// operator time when operators overlapped on several threads (their time exceeds the step).
Shares category_time_shares(const profile::StepProfile& profile);

// Operator types (forward and backward merged) by share of operator time, the first `n`.
Shares top_operator_types(const profile::StepProfile& profile, size_t n);

// The categories of a step's memory at its total peak, by share of that peak (those holding
// nothing left out).
Shares memory_mix(const profile::MemoryBreakdown& breakdown);

// "bf16 1.76x (error 5.4e-03)", "int8 2.03x (tokens 61% agree)", "bf16 1.58x": a precision's
// speed against fp32 and, when measured, its output error (translation models by the share of
// output tokens that agree, since an L2 distance of token ids means nothing). A ratio without
// its interval (a run of one sample) says so: "bf16 1.58x (interval unknown; error 5.4e-03)".
std::string precision_gain_text(const store::PrecisionComparisonRecord& comparison);

// "Conv 85%, Normalization 5%": the first `n` shares as percentages (those under 0.5% left out).
std::string shares_text(const Shares& shares, size_t n);

}  // namespace plumb::analysis
