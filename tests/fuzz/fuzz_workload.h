// The workload the fuzz targets validate against: a config with one key of each kind (int,
// double, bool, closed choice) and the batch key every workload has. No model is ever built.
#pragma once

#include "plumb/core/workload.h"

namespace plumb::fuzz {

inline Workload fuzz_workload() {
  Workload w;
  w.info.name = "fuzz";
  w.default_config = [] {
    Config c;
    c.add_int("batch", 8, "batch");
    c.add_int("layers", 4, "layers");
    c.add_double("dropout", 0.1, "dropout");
    c.add_bool("bias", true, "bias");
    c.add_choice("cell", "lstm", {"lstm", "gru", "rnn"}, "cell");
    return c;
  };
  return w;
}

// A fuzz input cut into lines ('\n'), NULs kept: what a shell could hand plumb as arguments.
inline std::vector<std::string> input_lines(const uint8_t* data, size_t size) {
  std::vector<std::string> lines(1);
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == '\n')
      lines.emplace_back();
    else
      lines.back().push_back(static_cast<char>(data[i]));
  }
  return lines;
}

}  // namespace plumb::fuzz
