// plumb report: one self-contained HTML file (charts bundled, no network needed to open it)
// from a results database; optionally compared with a second database.
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "plumb/cli/commands.h"
#include "plumb/core/atomic_file.h"
#include "plumb/core/errors.h"
#include "plumb/report/report.h"

namespace plumb::cli {

void add_report_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "report", "Write an HTML report (charts and tables) of everything a database holds");
  auto request = std::make_shared<report::ReportRequest>();
  request->db = "plumb.db";
  auto output = std::make_shared<std::string>("report.html");
  cmd->add_option("--db", request->db, "Results database")->capture_default_str();
  cmd->add_option("-o,--output", *output, "HTML file to write")->capture_default_str();
  cmd->add_option("--compare", request->compare_db,
                  "A second database (B): a comparison section (plumb compare's verdicts) and the "
                  "speedup of its sweeps over this one's");
  cmd->add_option("--tag-a", request->tag_a,
                  "Compare two tagged groups: runs with this tag are side A");
  cmd->add_option("--tag-b", request->tag_b, "... and runs with this tag side B");
  cmd->callback([request, output] {
    if (output->empty()) throw UsageError("-o needs a file name, e.g. -o report.html");
    if (request->tag_a.empty() != request->tag_b.empty())
      throw UsageError("--tag-a and --tag-b go together: name the tag of each side");
    const auto page = report::build_report(*request);
    write_file_atomically(*output, report::render_html(page));
    size_t charts = 0, cards = 0;
    for (const auto& s : page.sections)
      for (const auto& b : s.blocks) {
        charts += std::holds_alternative<report::Chart>(b) ? 1 : 0;
        if (const auto* grid = std::get_if<report::CardGrid>(&b)) cards += grid->cards.size();
      }
    std::cerr << fmt::format("report: {} workload cards, {} sections, {} charts\n", cards,
                             page.sections.size(), charts);
    std::cout << *output << '\n';
  });
}

}  // namespace plumb::cli
