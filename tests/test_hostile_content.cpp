// Text a user types or a workload produces is data, whatever it holds: a tag with HTML and
// script, a spreadsheet formula, a line break and bytes that are not UTF-8 is stored as given
// and comes out inert in the JSON, CSV and HTML plumb writes (no markup, no formula, no
// exception over the encoding).
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "cli_fixture.h"

namespace plumb {
namespace {

using testing::Cli;

// The tag as the shell builds it (dash's printf: \n and octal \377, a byte never valid in
// UTF-8), and the parts of it the checks look for.
const char* kHostileTagArg =
    "\"$(printf '=HYPERLINK(\"http://x\")<script>alert(1)</script>\\nline two \\377@SUM(1)')\"";

TEST_F(Cli, HostileTextIsInertInJsonCsvAndTheReport) {
  const auto run = plumb(quick_run_args() + " --json --tag " + kHostileTagArg + " --db " + db());
  ASSERT_EQ(run.code, 0) << run.err;
  // Printed JSON is valid (the stray byte became U+FFFD) and carries the text as a string.
  const auto printed = nlohmann::json::parse(run.out);
  const std::string tag = printed.at("tag");
  EXPECT_EQ(tag.rfind("=HYPERLINK(\"http://x\")<script>alert(1)</script>\nline two ", 0), 0u)
      << tag;
  EXPECT_NE(tag.find("\xEF\xBF\xBD@SUM(1)"), std::string::npos) << tag;

  // The whole store as JSON: one odd tag does not fail the export.
  const auto json = plumb("export --format json --db " + db());
  ASSERT_EQ(json.code, 0) << json.err;
  EXPECT_EQ(nlohmann::json::parse(json.out).at("runs").at(0).at("tag"), tag);

  // CSV: the field is quoted (it holds quotes and a line break) and starts with ', so a
  // spreadsheet shows it as text instead of running the formula.
  const auto csv = plumb("export --format csv --table runs --db " + db());
  ASSERT_EQ(csv.code, 0) << csv.err;
  EXPECT_NE(csv.out.find(",\"'=HYPERLINK(\"\"http://x\"\")<script>"), std::string::npos) << csv.out;
  EXPECT_EQ(csv.out.find(",=HYPERLINK"), std::string::npos) << csv.out;
  // Numbers are not touched: no field of the run became text.
  EXPECT_EQ(csv.out.find(",'0"), std::string::npos) << csv.out;
  EXPECT_EQ(csv.out.find(",'-"), std::string::npos) << csv.out;

  // The report escapes it in its HTML and in the JSON its charts embed: no script element
  // comes from the tag.
  const std::string html_path = (dir_ / "report.html").string();
  const auto report = plumb("report --db " + db() + " -o " + html_path);
  ASSERT_EQ(report.code, 0) << report.err;
  const std::string html = testing::slurp(html_path);
  EXPECT_EQ(html.find("<script>alert(1)"), std::string::npos);
  EXPECT_NE(html.find("HYPERLINK"), std::string::npos);  // the tag is shown, as text
}

}  // namespace
}  // namespace plumb
