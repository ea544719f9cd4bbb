// Shared --batch / --set handling (see config_options.h).
#include "plumb/cli/config_options.h"

#include "plumb/core/errors.h"

namespace plumb::cli {

void add_config_options(CLI::App& cmd, ConfigOverrides& o, BatchOption batch) {
  if (batch == BatchOption::kSingle)
    cmd.add_option_function<int64_t>(
        "--batch",
        [&o](const int64_t& b) {
          o.batch = b;
          o.batch_given = true;
        },
        "Mini-batch size (default: the workload's published one)");
  // Config values are numbers or names, never lists, so a comma only separates settings.
  cmd.add_option("--set", o.sets,
                 "Override config keys: --set key=value[,key=value...] (repeatable)")
      ->delimiter(',')
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

Config resolve_config(const Workload& workload, const ConfigOverrides& o) {
  Config config = o.suite_size ? suite_config(workload) : workload.default_config();
  config.apply_settings(o.sets);
  if (o.batch_given) {
    if (o.batch <= 0)
      throw UsageError("--batch must be at least 1, got " + std::to_string(o.batch));
    config.set_int("batch", o.batch);
  }
  return config;
}

}  // namespace plumb::cli
