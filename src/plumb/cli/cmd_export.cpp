// plumb export: the results store as CSV (runs or samples) or one JSON document.
#include <cerrno>
#include <cstring>
#include <iostream>
#include <memory>
#include <sstream>

#include <fmt/format.h>

#include "plumb/cli/commands.h"
#include "plumb/core/atomic_file.h"
#include "plumb/core/errors.h"
#include "plumb/store/record_json.h"
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
    const auto write = [&](std::ostream& out) {
      if (*format == "json") {
        store::export_json(*store, out);
      } else {
        store::export_csv(*store, *table, out);
      }
    };
    if (!output->empty()) {
      // Made whole before anything is written: a file is replaced only by a complete export
      // and a failed write (a full disk) leaves the one there as it was.
      std::ostringstream text;
      write(text);
      write_file_atomically(*output, text.str());
      return;
    }
    // A pipe or a redirection that refuses the text (a full disk) must not pass for a complete
    // export.
    write(std::cout);
    std::cout.flush();
    if (!std::cout)
      throw UsageError(fmt::format(
          "writing the export to standard output failed: {}; what was written is incomplete",
          std::strerror(errno)));
  });
}

}  // namespace plumb::cli
