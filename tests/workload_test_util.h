// Test helpers: a workload's config shrunk by its own tiny_config overrides, and the shell of
// the workloads tests build their own models into.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "plumb/core/text.h"
#include "plumb/core/workload.h"

namespace plumb::testing {

// A test workload's description and config (its batch, and a dtype key that only takes fp32);
// the caller sets `build`.
inline Workload test_workload_shell(const std::string& name, const std::string& description,
                                    int64_t batch, int64_t small_batch = 1,
                                    std::vector<std::string> suites = {"test"}) {
  Workload w;
  w.info = {name, std::move(suites), "test", description, "none", "samples/s", small_batch, {}, {}};
  w.default_config = [batch] {
    Config c;
    c.add_int("batch", batch, "batch");
    c.add_choice("dtype", "fp32", {"fp32"}, "dtype");
    return c;
  };
  return w;
}

inline Config tiny_config(const Workload& w) {
  return plumb::tiny_config(w);
}

}  // namespace plumb::testing
