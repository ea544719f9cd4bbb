// Test helpers: a workload's config shrunk by its own tiny_config overrides.
#pragma once

#include "plumb/core/text.h"
#include "plumb/core/workload.h"

namespace plumb::testing {

inline Config tiny_config(const Workload& w) {
  return plumb::tiny_config(w);
}

}  // namespace plumb::testing
