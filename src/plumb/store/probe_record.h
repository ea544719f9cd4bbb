// A machine-ceilings probe as the store holds it.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "plumb/platform/environment.h"

namespace plumb::store {

// A machine-ceilings probe (`plumb probe`) as stored: the whole probe document (docs/json.md)
// plus what identifies the machine it describes.
struct StoredProbe {
  int64_t id = 0;
  std::string machine;  // platform::machine_key(): probes are reused only on the same machine
  std::string mode;     // "quick" | "thorough"
  std::string measured_at;
  double seconds = 0;  // how long the probe took
  nlohmann::ordered_json document;
  platform::Environment environment;
};

}  // namespace plumb::store
