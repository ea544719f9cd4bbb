// Workloads named or listed by suite (see workload_selection.h).
#include "plumb/cli/workload_selection.h"

#include <algorithm>

#include "plumb/core/errors.h"
#include "plumb/workloads/all_workloads.h"

namespace plumb::cli {

std::vector<const Workload*> chosen_workloads(const std::vector<std::string>& names,
                                              const std::string& suites) {
  const auto& registry = workloads::default_registry();
  std::vector<const Workload*> chosen;
  if (!suites.empty()) chosen = registry.list(suites);
  for (const auto& name : names) {
    const Workload* w = &registry.get(name);
    if (std::find(chosen.begin(), chosen.end(), w) == chosen.end()) chosen.push_back(w);
  }
  if (chosen.empty()) throw UsageError("name one or more workloads, or --suite S");
  return chosen;
}

}  // namespace plumb::cli
