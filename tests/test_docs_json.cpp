// docs/json.md is the JSON interface's reference: the schema version it states is the one
// plumb export prints, and every field plumb run --json and plumb export print at the top level
// (and in a run's environment), and every field of a token-level plumb serve session, is
// documented there.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_fixture.h"
#include "plumb/store/record_json.h"
#include "plumb/store/serve_records.h"

namespace plumb {
namespace {

using testing::Cli;

std::string json_doc() {
  const auto path =
      std::filesystem::path(__FILE__).parent_path().parent_path() / "docs" / "json.md";
  return testing::slurp(path);
}

// Every key of `object` appears in `doc` as `key` (in backquotes) or "key" (in an example).
void expect_documented(const nlohmann::json& object, const std::string& doc,
                       const std::string& where) {
  for (const auto& item : object.items())
    EXPECT_TRUE(doc.find("`" + item.key() + "`") != std::string::npos ||
                doc.find("\"" + item.key() + "\"") != std::string::npos ||
                doc.find(item.key() + ",") != std::string::npos ||
                doc.find(item.key() + "}") != std::string::npos)
        << where << " prints '" << item.key() << "', which docs/json.md does not mention";
}

TEST_F(Cli, JsonReferenceMatchesWhatTheBinaryPrints) {
  const std::string doc = json_doc();
  ASSERT_FALSE(doc.empty());
  const auto run_doc = plumb_json(quick_run_args());
  expect_documented(run_doc, doc, "plumb run --json");
  expect_documented(run_doc.at("environment"), doc, "a run's environment");

  const auto exported = plumb("export --format json --db " + db());
  ASSERT_EQ(exported.code, 0) << exported.err;
  const auto export_doc = nlohmann::json::parse(exported.out);
  expect_documented(export_doc, doc, "plumb export --format json");
  std::smatch stated;
  ASSERT_TRUE(std::regex_search(doc, stated, std::regex("\"plumb_schema_version\": ([0-9]+)")))
      << "docs/json.md states no plumb_schema_version";
  EXPECT_EQ(std::stoi(stated[1]), export_doc.at("plumb_schema_version").get<int>())
      << "docs/json.md states another schema version than plumb export prints";
}

// A token-level serve session's JSON (store::serve_session_json) with every field it can print:
// searched, with an Offline ceiling and the trial at the found rate, and every document key.
TEST(DocsJson, TokenServeSessionFieldsAreDocumented) {
  const std::string doc = json_doc();
  ASSERT_FALSE(doc.empty());
  store::StoredServeSession s;
  s.kind = "token";
  s.scenario = "server";
  s.scheduler = "continuous";
  s.searched = true;
  s.found_qps = 2;
  s.failed_qps = 3;
  for (const std::string role : {"offline", "trial"}) {
    store::StoredServeMeasurement m;
    m.role = role;
    m.offered_qps = 2;
    m.verdict = "met";
    s.measurements.push_back(m);
  }
  for (const char* key :
       {"lengths", "bound_notes", "kv_bytes_per_position", "slot_positions", "lone_ttft_ms",
        "lone_tpot_ms", "full_batch_tpot_ms", "defaults", "config", "warnings", "precision_notes"})
    s.document[key] = 1;
  const auto j = nlohmann::json::parse(store::serve_session_json(s).dump());
  ASSERT_TRUE(j.contains("at_found") && j.contains("offline_rate") && j.contains("lengths"));
  expect_documented(j, doc, "a token-level plumb serve session");
  expect_documented(j.at("bounds"), doc, "a token session's bounds");
  expect_documented(j.at("batching"), doc, "a token session's batching");
  expect_documented(j.at("measurements").at(0), doc, "a token session's measurement");
  expect_documented(j.at("measurements").at(0).at("ttft"), doc, "a measurement's ttft");
}

}  // namespace
}  // namespace plumb
