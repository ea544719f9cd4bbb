// plumb export: the results store as CSV (runs or samples) or one JSON document.
#include <fstream>
#include <iostream>
#include <memory>

#include "plumb/cli/commands.h"
#include "plumb/core/errors.h"
#include "plumb/store/results_store.h"

namespace plumb::cli {

void add_export_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("export", "Write stored results as CSV or JSON");
  auto db = std::make_shared<std::string>("plumb.db");
  auto format = std::make_shared<std::string>("json");
  auto table = std::make_shared<std::string>("runs");
  auto output = std::make_shared<std::string>();
  cmd->add_option("--db", *db, "Results database")->capture_default_str();
  cmd->add_option("--format", *format, "csv or json")->capture_default_str();
  cmd->add_option("--table", *table, "For csv: runs or samples")->capture_default_str();
  cmd->add_option("-o,--output", *output, "Output file (default: stdout)");
  cmd->callback([db, format, table, output] {
    if (*format != "csv" && *format != "json")
      throw UsageError("--format must be csv or json, got '" + *format + "'");
    auto store = store::ResultsStore::open(*db, /*read_only=*/true);
    std::ofstream file;
    if (!output->empty()) {
      file.open(*output);
      if (!file) throw UsageError("cannot write '" + *output + "'; check the directory exists");
    }
    std::ostream& out = output->empty() ? std::cout : file;
    if (*format == "json") {
      store::export_json(*store, out);
    } else {
      store::export_csv(*store, *table, out);
    }
  });
}

}  // namespace plumb::cli
