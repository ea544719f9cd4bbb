// plumb info: a workload's description, resolved config, trainable parameter count and layer
// list with output shapes (from one traced inference step at batch 1): jobs/info_job, printed by
// jobs/info_report.
#include <iostream>
#include <memory>

#include "plumb/cli/commands.h"
#include "plumb/cli/config_options.h"
#include "plumb/core/json_text.h"
#include "plumb/jobs/info_job.h"
#include "plumb/jobs/info_report.h"
#include "plumb/workloads/all_workloads.h"

namespace plumb::cli {

void add_info_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("info", "Describe a workload: config, parameters, layers");
  auto name = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  auto intensity = std::make_shared<bool>(false);
  auto overrides = std::make_shared<ConfigOverrides>();
  auto context = std::make_shared<int64_t>(0);
  cmd->add_option("workload", *name, "Workload name (see plumb list)")->required();
  add_config_options(*cmd, *overrides);
  cmd->add_flag("--json", *json, "Print one JSON document on stdout");
  cmd->add_flag("--intensity", *intensity,
                "Also trace the arithmetic intensity per layer (Facebook Table 1) at --batch "
                "(default 1)");
  auto* context_option =
      cmd->add_option("--context", *context,
                      "Transformers: the positions a decode token attends, for the per-token table "
                      "(default: the config's prompt + gen)");
  cmd->callback([name, json, intensity, overrides, context, context_option] {
    const Workload& w = workloads::default_registry().get(*name);
    const jobs::InfoJobResult result = jobs::run_info_job(
        w, {resolve_config(w, *overrides), *intensity, overrides->batch_given,
            context_option->count() > 0 ? std::optional<int64_t>(*context) : std::nullopt});
    if (*json)
      std::cout << json_text(jobs::info_json(result), 2) << '\n';
    else
      jobs::print_info(std::cout, result);
  });
}

}  // namespace plumb::cli
