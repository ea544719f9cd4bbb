// The two ways a workload is executed: a full training step or a forward-only inference step.
#pragma once

#include <string>

namespace plumb {

enum class Mode { kTrain, kInfer };

inline const char* mode_name(Mode m) {
  return m == Mode::kTrain ? "train" : "infer";
}

// Parses "train" / "infer"; throws UsageError otherwise.
Mode parse_mode(const std::string& text);

}  // namespace plumb
