// The workload registry: an explicit list filled by register_all_workloads(), never by
// static initialisers, so there is no initialisation-order trap and a linker never drops a
// workload silently.
#pragma once

#include <string>
#include <vector>

#include "plumb/core/workload.h"

namespace plumb {

class Registry {
 public:
  // Adds a workload; a duplicate name is a bug.
  void add(Workload workload);

  // Throws UsageError naming close matches when `name` is unknown.
  const Workload& get(const std::string& name) const;

  // All workloads, or those in any of the comma-separated suites ("fathom,tbd"), in
  // registration order, each once (throws UsageError for an unknown suite).
  std::vector<const Workload*> list(const std::string& suites = "") const;

  std::vector<std::string> names() const;
  std::vector<std::string> suites() const;

 private:
  std::vector<Workload> workloads_;
};

}  // namespace plumb
