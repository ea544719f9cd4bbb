// The options every workload command shares: --batch and repeated --set key=value, resolved
// against the workload's documented defaults.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "plumb/core/workload.h"

namespace plumb::cli {

struct ConfigOverrides {
  int64_t batch = 0;  // 0: the workload's default
  bool batch_given = false;
  std::vector<std::string> sets;  // "key=value"
  bool suite_size = false;        // start from suite_config() instead of the published config
};

enum class BatchOption { kSingle, kNone };  // memory declares its own --batch list

void add_config_options(CLI::App& cmd, ConfigOverrides& overrides,
                        BatchOption batch = BatchOption::kSingle);

// The published config (or the suite's, with suite_size) with the overrides applied; throws
// UsageError for unknown keys or bad values.
Config resolve_config(const Workload& workload, const ConfigOverrides& overrides);

}  // namespace plumb::cli
