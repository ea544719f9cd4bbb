// Test helpers: a workload's config shrunk by its own tiny_config overrides.
#pragma once

#include "plumb/core/text.h"
#include "plumb/core/workload.h"

namespace plumb::testing {

inline Config tiny_config(const Workload& w) {
  Config c = w.default_config();
  for (const auto& kv : w.info.tiny_config) {
    auto eq = kv.find('=');
    c.set_from_text(kv.substr(0, eq), kv.substr(eq + 1));
  }
  return c;
}

}  // namespace plumb::testing
