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

std::vector<const Workload*> Registry::list(const std::string& suites_text) const {
  const std::vector<std::string> wanted =
      suites_text.empty() ? std::vector<std::string>{} : split(suites_text, ',');
  const auto all = suites();
  for (const auto& suite : wanted) {
    if (std::find(all.begin(), all.end(), suite) == all.end())
      throw UsageError("unknown suite '" + suite + "'" + suggestion_suffix(suite, all) +
                       "; valid suites: " + join(all, ", "));
  }
  auto in_wanted = [&](const Workload& w) {
    for (const auto& suite : wanted)
      if (std::find(w.info.suites.begin(), w.info.suites.end(), suite) != w.info.suites.end())
        return true;
    return wanted.empty();
  };
  std::vector<const Workload*> out;
  for (const auto& w : workloads_)
    if (in_wanted(w)) out.push_back(&w);
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
