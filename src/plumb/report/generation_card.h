// A generative workload's lines on its front-page card (report_workloads.cpp): each phase's bound
// in one sentence drawn from its stored profile ("Decode: reads 2.20 GiB and computes 2.2 GFLOP
// per token, memory-bound at 74% of the DRAM bandwidth."), and the time to first token and per
// output token of its newest timed inference run.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "plumb/analysis/roofline.h"
#include "plumb/report/page.h"
#include "plumb/store/profile_records.h"
#include "plumb/store/run_record.h"

namespace plumb::report {

// One sentence per phase the profile timed (analysis::phase_findings); empty for a profile of
// no generation. `ceilings` may be null (no probe of the machine stored).
std::vector<std::string> phase_bound_findings(const store::StoredProfile& profile,
                                              const analysis::Ceilings* ceilings);

// "Generation (batch 1, prompt 128, gen 64)": TTFT, TPOT and both token rates; nullopt for a
// run with no generation.
std::optional<CardField> generation_field(const store::StoredRun& run);

}  // namespace plumb::report
