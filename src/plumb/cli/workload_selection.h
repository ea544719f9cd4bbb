// The workloads a multi-workload command was asked for: names given as arguments and every
// workload of --suite, each once, suites first in registration order.
#pragma once

#include <string>
#include <vector>

#include "plumb/core/workload.h"

namespace plumb::cli {

// Throws UsageError for an unknown name or suite (the registry's message, with suggestions) and
// when neither names nor suites were given.
std::vector<const Workload*> chosen_workloads(const std::vector<std::string>& names,
                                              const std::string& suites);

}  // namespace plumb::cli
