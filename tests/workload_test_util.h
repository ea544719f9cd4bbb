// Test helpers: a workload's config shrunk by its own tiny_config overrides.
#pragma once

#include "plumb/core/text.h"
#include "plumb/core/workload.h"

namespace plumb::testing {

inline Config tiny_config(const Workload& w) {
  Config c = w.default_config();
  c.apply_settings(w.info.tiny_config);
  return c;
}

}  // namespace plumb::testing
