// plumb characterize end to end: every item of every workload stored once under the
// characterization's tag, a pass killed mid-way resumed without repeating what finished, and
// bad input refused before anything runs.
#include <gtest/gtest.h>

#include <signal.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>

#include <SQLiteCpp/SQLiteCpp.h>
#include <nlohmann/json.hpp>

#include "cli_fixture.h"
#include "plumb/platform/environment.h"
#include "plumb/platform/probe.h"
#include "report_fixture.h"
#include "scoped_env.h"

namespace plumb::testing {
namespace {

constexpr const char* kPass =
    "characterize autoenc resnet50 --quick --size tiny --dtypes int8 --threads 1";

// Items stored so far: "workload kind mode dtype" -> how many records (each must be 1).
std::map<std::string, int> stored_items(const std::string& db) {
  std::map<std::string, int> out;
  try {
    SQLite::Database d(db, SQLite::OPEN_READONLY);
    SQLite::Statement runs(d, "SELECT workload, mode, dtype FROM runs WHERE tag = ?");
    runs.bind(1, "characterize:quick");
    while (runs.executeStep())
      ++out[runs.getColumn(0).getString() + " run " + runs.getColumn(1).getString() + " " +
            runs.getColumn(2).getString()];
    for (const char* table : {"profiles", "memory_profiles"}) {
      SQLite::Statement q(d, std::string("SELECT workload, mode FROM ") + table + " WHERE tag = ?");
      q.bind(1, "characterize:quick");
      while (q.executeStep())
        ++out[q.getColumn(0).getString() + " " + table + " " + q.getColumn(1).getString()];
    }
    SQLite::Statement c(d, "SELECT count(*) FROM precision_comparisons");
    c.executeStep();
    if (c.getColumn(0).getInt() > 0) out["comparisons"] = c.getColumn(0).getInt();
  } catch (const std::exception&) {
    // not created yet
  }
  return out;
}

TEST_F(Cli, CharacterizeKilledMidWayResumesWithoutRepeating) {
  // 12 items: per workload a timed run and a profile of each mode, a training memory pass and
  // int8 inference against fp32. SIGKILLed (PLUMB_KILL_AT, core/kill_point.h) as the 7th item
  // starts: autoenc's six are stored, nothing of resnet50's.
  setenv("PLUMB_KILL_AT", "characterize-item:7", 1);
  const auto killed = plumb(std::string(kPass) + " --db " + db());
  unsetenv("PLUMB_KILL_AT");
  ASSERT_EQ(killed.code, 128 + SIGKILL) << killed.err;
  const auto before = stored_items(db());
  EXPECT_EQ(before.count("autoenc memory_profiles train"), 1u) << killed.err;
  EXPECT_EQ(before.count("autoenc run infer int8"), 1u) << killed.err;
  EXPECT_EQ(before.count("resnet50 run train fp32"), 0u) << killed.err;
  {
    SQLite::Database d(db(), SQLite::OPEN_READONLY);
    EXPECT_EQ(d.execAndGet("PRAGMA integrity_check").getString(), "ok");
  }

  const auto r = plumb(std::string(kPass) + " --json --db " + db());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc.at("items"), 12);
  EXPECT_EQ(doc.at("already_stored"), 6);
  EXPECT_EQ(doc.at("measured"), 6);

  const auto after = stored_items(db());
  for (const auto& [item, n] : after) {
    if (item == "comparisons") continue;
    EXPECT_EQ(n, 1) << item << " stored more than once";
  }
  for (const char* w : {"autoenc", "resnet50"}) {
    for (const char* mode : {"train", "infer"}) {
      EXPECT_EQ(after.count(std::string(w) + " run " + mode + " fp32"), 1u) << w << mode;
      EXPECT_EQ(after.count(std::string(w) + " profiles " + mode), 1u) << w << mode;
    }
    EXPECT_EQ(after.count(std::string(w) + " memory_profiles train"), 1u) << w;
    EXPECT_EQ(after.count(std::string(w) + " run infer int8"), 1u) << w;
  }
  EXPECT_EQ(after.at("comparisons"), 2);
  for (const auto& w : doc.at("workloads")) {
    EXPECT_EQ(w.at("runs").at("infer").at("status"), "ok") << w;
    EXPECT_GT(w.at("memory").at("total_peak_bytes").get<double>(), 0) << w;
    ASSERT_EQ(w.at("precisions").size(), 1u) << w;
    EXPECT_GT(w.at("precisions")[0].at("speedup").get<double>(), 0) << w;
  }
  // Across the set: both workloads' category shares and their dendrogram, per mode.
  ASSERT_EQ(doc.at("cross_set").size(), 2u);
  for (const auto& c : doc.at("cross_set")) {
    EXPECT_EQ(c.at("items").size(), 2u) << c.at("mode");
    EXPECT_EQ(c.at("dendrogram").at("merges").size(), 1u) << c.at("mode");
  }
  // What bounds each profiled step, in words (no probe stored: the category and its share).
  for (const auto& w : doc.at("workloads"))
    for (const char* mode : {"train", "infer"}) {
      const auto& bound = w.at("profiles").at(mode).at("bound");
      EXPECT_GT(bound.at("category_share").get<double>(), 0) << w.at("workload") << mode;
      EXPECT_EQ(bound.at("sentence")
                    .get<std::string>()
                    .rfind(bound.at("category").get<std::string>() + " takes ", 0),
                0u)
          << bound;
    }
  // Nothing left: a third run measures nothing.
  const auto again = plumb(std::string(kPass) + " --json --db " + db());
  EXPECT_EQ(nlohmann::json::parse(again.out).at("measured"), 0);
  // The report opens on a card per workload, each filled from the pass.
  const std::string html = (dir_ / "r.html").string();
  const auto report = plumb("report --db " + db() + " -o " + html);
  ASSERT_EQ(report.code, 0) << report.err;
  EXPECT_NE(report.err.find("2 workload cards"), std::string::npos) << report.err;
  const std::string page = slurp(html);
  for (const char* w : {"autoenc", "resnet50"})
    EXPECT_NE(page.find(std::string("id=\"card-") + w + "\" data-complete=\"1\""),
              std::string::npos)
        << w << "'s card is not filled";
}

// A probe of this machine that found no bf16 units (the path of a CPU without avx512_bf16 or
// AMX, taken here on any CPU): a quick pass does not time bf16, stores why with the command
// that times it, and says so in its summary, its JSON and the report's card; naming bf16 in
// --dtypes times it, and the record then supersedes the untimed one.
TEST_F(Cli, QuickPassLeavesAPrecisionWithoutUnitsUntimedAndSaysWhy) {
  {
    auto probe = report_probe();
    probe.machine = platform::machine_key(platform::capture_environment(1));
    probe.document["plumb_probe_version"] = platform::kProbeDocumentVersion;
    probe.document["max_threads"] = 1;
    probe.document["peaks"]["bf16"] = {{"supported", false},
                                       {"reason", "no avx512_bf16 on this CPU"}};
    store::ResultsStore::open(db())->save_probe(probe);
  }
  const std::string pass = "characterize autoenc --quick --size tiny --threads 1 --db " + db();
  const auto quick = plumb(pass + " --json");
  ASSERT_EQ(quick.code, 0) << quick.err;
  EXPECT_NE(quick.err.find("bf16: no bf16 units on this CPU (the probe: no avx512_bf16 on this "
                           "CPU); LibTorch emulates it"),
            std::string::npos)
      << quick.err;
  EXPECT_EQ(stored_items(db()).count("autoenc run infer bf16"), 0u);
  EXPECT_EQ(stored_items(db()).count("autoenc run infer int8"), 1u);
  const auto doc = nlohmann::json::parse(quick.out);
  const auto& untimed = doc["workloads"][0]["untimed_precisions"];
  ASSERT_EQ(untimed.size(), 1u) << quick.out;
  EXPECT_EQ(untimed[0]["dtype"], "bf16");
  EXPECT_NE(untimed[0]["reason"].get<std::string>().find("x fp32 measured on"), std::string::npos);
  EXPECT_EQ(untimed[0]["command"],
            "plumb characterize autoenc --quick --dtypes bf16 --size tiny --db " + db());
  const auto text = plumb(pass);
  EXPECT_NE(text.out.find("bf16 not timed (no units)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("not timed: bf16: no bf16 units"), std::string::npos) << text.out;
  const std::string html = ::testing::TempDir() + "untimed_report.html";
  ASSERT_EQ(plumb("report --db " + db() + " -o " + html).code, 0);
  std::ifstream page(html);
  const std::string body((std::istreambuf_iterator<char>(page)), std::istreambuf_iterator<char>());
  EXPECT_NE(body.find("bf16 not timed: no bf16 units on this CPU"), std::string::npos);
  // Named in --dtypes, it is timed, and the untimed record no longer shows.
  const auto named = plumb(pass + " --dtypes bf16");
  ASSERT_EQ(named.code, 0) << named.err;
  EXPECT_EQ(stored_items(db()).count("autoenc run infer bf16"), 1u);
  EXPECT_EQ(named.out.find("not timed"), std::string::npos) << named.out;
}

TEST_F(Cli, CharacterizeBadInputIsAUsageError) {
  expect_usage_error("characterize --db " + db(), "name one or more workloads");
  expect_usage_error("characterize autoenc --size huge --db " + db(), "--size must be suite");
  expect_usage_error("characterize autoenc --dtypes fp32,int4 --db " + db(),
                     "valid: fp32, bf16, fp16, int8");
  expect_usage_error("characterize --suite nosuch --db " + db(), "nosuch");
  ScopedEnv env;
  env.set("PLUMB_CPU_FEATURES_OFF", "avx512_bf17");
  expect_usage_error("characterize autoenc --db " + db(), "unknown feature 'avx512_bf17'");
}

}  // namespace
}  // namespace plumb::testing
