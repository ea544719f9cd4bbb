// plumb characterize's measure step: one item of the pass measured and stored the moment it
// finishes, tagged with the pass; a precision against the pass's stored fp32 inference run; a
// decode roofline as plumb analyze decode measures it.
#pragma once

#include <map>
#include <string>

#include "plumb/jobs/characterize_plan.h"
#include "plumb/run/error_against_fp32.h"
#include "plumb/store/results_store.h"

namespace plumb::jobs {

// fp32's outputs per workload, captured once for all its precisions.
using Fp32References = std::map<std::string, run::Fp32Reference>;

// Measures one item and stores it; false when it failed (stored with its status). `stored` is
// what the store holds for the pass, kept current: an fp32 inference run joins it as the
// reference of the workload's precisions. A decode item runs plumb analyze decode's sweep over
// its sizes (decode_item_options) on the same database.
bool measure_item(const CharacterizeJobOptions& job, const CharacterizeItem& item,
                  const run::RunOptions& options, const CharacterizeBudget& budget,
                  const std::string& tag, store::ResultsStore& db, StoredItems& stored,
                  Fp32References& references);

}  // namespace plumb::jobs
