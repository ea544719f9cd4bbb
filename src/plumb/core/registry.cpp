// Workload registry (see registry.h).
#include "plumb/core/registry.h"

#include <algorithm>
#include <set>

#include "plumb/core/errors.h"
#include "plumb/core/text.h"

namespace plumb {

void Registry::add(Workload workload) {
  PLUMB_ASSERT(!workload.info.name.empty(), "workload without a name");
  for (const auto& w : workloads_)
    PLUMB_ASSERT(w.info.name != workload.info.name, "workload registered twice");
  PLUMB_ASSERT(workload.default_config && workload.build, "workload without builder");
  workloads_.push_back(std::move(workload));
}

const Workload& Registry::get(const std::string& name) const {
  for (const auto& w : workloads_)
    if (w.info.name == name) return w;
  throw UsageError("unknown workload '" + name + "'" + suggestion_suffix(name, names()) +
                   "; run 'plumb list' to see all workloads");
}

std::vector<const Workload*> Registry::list(const std::string& suite) const {
  if (!suite.empty()) {
    auto all = suites();
    if (std::find(all.begin(), all.end(), suite) == all.end())
      throw UsageError("unknown suite '" + suite + "'" + suggestion_suffix(suite, all) +
                       "; valid suites: " + join(all, ", "));
  }
  std::vector<const Workload*> out;
  for (const auto& w : workloads_) {
    const auto& s = w.info.suites;
    if (suite.empty() || std::find(s.begin(), s.end(), suite) != s.end()) out.push_back(&w);
  }
  return out;
}

std::vector<std::string> Registry::names() const {
  std::vector<std::string> out;
  for (const auto& w : workloads_) out.push_back(w.info.name);
  return out;
}

std::vector<std::string> Registry::suites() const {
  std::set<std::string> s;
  for (const auto& w : workloads_) s.insert(w.info.suites.begin(), w.info.suites.end());
  return {s.begin(), s.end()};
}

}  // namespace plumb
