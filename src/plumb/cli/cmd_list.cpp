// plumb list: the registered workloads, optionally one suite, as a table or JSON.
#include <iostream>

#include <nlohmann/json.hpp>

#include "plumb/cli/commands.h"
#include "plumb/cli/table.h"
#include "plumb/core/json_text.h"
#include "plumb/core/text.h"
#include "plumb/workloads/all_workloads.h"

namespace plumb::cli {

void add_list_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("list", "List the registered workloads");
  auto suite = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  cmd->add_option("--suite", *suite,
                  "Only workloads of these suites, comma-separated (fathom,tbd ...)");
  cmd->add_flag("--json", *json, "Print one JSON document on stdout");
  cmd->callback([suite, json] {
    const auto workloads = workloads::default_registry().list(*suite);
    if (*json) {
      nlohmann::ordered_json out;
      out["workloads"] = nlohmann::ordered_json::array();
      for (const auto* w : workloads) {
        out["workloads"].push_back({{"name", w->info.name},
                                    {"suites", w->info.suites},
                                    {"domain", w->info.domain},
                                    {"description", w->info.description},
                                    {"source", w->info.source},
                                    {"throughput_unit", w->info.throughput_unit}});
      }
      std::cout << json_text(out, 2) << '\n';
      return;
    }
    Table table({"workload", "suites", "domain", "unit", "description"});
    for (const auto* w : workloads)
      table.add_row({w->info.name, join(w->info.suites, ","), w->info.domain,
                     w->info.throughput_unit, w->info.description});
    table.print(std::cout);
  });
}

}  // namespace plumb::cli
