// Store-side inputs of fusion mining (see fusion_inputs.h).
#include "plumb/analysis/fusion_inputs.h"

#include <fmt/format.h>

#include "plumb/core/errors.h"
#include "plumb/store/profile_records.h"

namespace plumb::analysis {

const store::StoredProfile* newest_profile(const std::vector<store::StoredProfile>& profiles,
                                           const std::string& workload, const std::string& mode,
                                           const std::string& dtype) {
  for (auto it = profiles.rbegin(); it != profiles.rend(); ++it)
    if (it->workload == workload && it->mode == mode && dtype_name(it->dtype) == dtype &&
        it->result.status == run::RunStatus::kOk)
      return &*it;
  return nullptr;
}

profile::StepGraph stored_graph(const store::ResultsStore& db, const store::StoredProfile& p,
                                const std::string& db_path) {
  auto graph = db.load_profile_graph(p.id);
  if (!graph)
    throw UsageError(fmt::format(
        "profile {} of {} ({}, {}) in {} was stored before plumb captured operator graphs; "
        "re-profile with this version: plumb profile {} --mode {} --dtype {} --db {} (or add "
        "--profile here)",
        p.id, p.workload, p.mode, dtype_name(p.dtype), db_path, p.workload, p.mode,
        dtype_name(p.dtype), db_path));
  return std::move(*graph);
}

std::string check_shapes(const FusionPattern& pattern) {
  std::string shapes;
  for (const auto& s : pattern.example_signatures) shapes += (shapes.empty() ? "" : "; ") + s;
  return shapes;
}

const store::StoredFusedKernelCheck* matching_check(
    const std::vector<store::StoredFusedKernelCheck>& checks, const std::string& kind,
    const std::string& shapes, int threads, const std::string& machine) {
  for (auto it = checks.rbegin(); it != checks.rend(); ++it)
    if (it->check.kind == kind && it->check.shapes == shapes && it->check.threads == threads &&
        it->machine == machine)
      return &*it;
  return nullptr;
}

}  // namespace plumb::analysis
