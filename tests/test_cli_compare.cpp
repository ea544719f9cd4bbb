// End-to-end tests of plumb compare: the real binary on stores of synthetic runs (and one pair
// of real runs with the injected-delay testing aid): verdicts, exit status for CI, the
// environment listed first, the three ways of selecting sides, JSON, and bad usage (exit 2,
// one actionable line, nothing on stdout).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "cli_fixture.h"
#include "stored_runs.h"

#include "plumb/store/dist_record.h"

namespace plumb {
namespace {

using testing::Cli;
using testing::Result;
using testing::store_synthetic_run;
using testing::SyntheticRun;

class CompareCli : public Cli {
 protected:
  std::string file(const std::string& name) const { return (dir_ / name).string(); }
  int64_t store(const std::string& db, const SyntheticRun& s) {
    return store_synthetic_run(*store::ResultsStore::open(db), s);
  }
  // Two runs of the same setting in db(); B's mean step time is `slowdown` times A's.
  void store_pair(double slowdown, const std::string& cpu_b = "Test CPU @ 2.0GHz") {
    SyntheticRun s;
    s.tag = "a";
    store(db(), s);
    s.tag = "b";
    s.seed = 2;
    s.mean_s *= slowdown;
    s.cpu_model = cpu_b;
    store(db(), s);
  }
};

TEST_F(CompareCli, IdenticalRunsExitZero) {
  store_pair(1.0);
  Result r = plumb("compare --db " + db() + " 1 2");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("no significant difference"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("environment: no differences"), std::string::npos) << r.out;
  // One run per side: no resolution line (the run-to-run variation is unknown; a note says so).
  EXPECT_EQ(r.out.find("resolution ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("note: "), std::string::npos) << r.out;
}

TEST_F(CompareCli, ClearSlowdownExitsOneWithEnvironmentFirst) {
  store_pair(1.15, "Slower CPU");
  Result r = plumb("compare --db " + db() + " 1 2");
  EXPECT_EQ(r.code, 1) << r.err;
  const size_t environment = r.out.find("environment differences");
  const size_t results = r.out.find("throughput A");
  ASSERT_NE(environment, std::string::npos) << r.out;
  ASSERT_NE(results, std::string::npos) << r.out;
  EXPECT_LT(environment, results) << r.out;
  EXPECT_NE(r.out.find("Slower CPU"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("slower"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("exit 1"), std::string::npos) << r.out;
}

TEST_F(CompareCli, JsonDocument) {
  store_pair(1.15, "Slower CPU");
  Result r = plumb("compare --db " + db() + " --tag a --tag b --json");
  EXPECT_EQ(r.code, 1) << r.err;
  const auto j = nlohmann::json::parse(r.out);  // stdout is exactly one document
  EXPECT_EQ(j["a"], "tag=a in plumb.db");
  EXPECT_EQ(j["summary"]["slower"], 1);
  EXPECT_EQ(j["summary"]["slowdown_found"], true);
  const auto& row = j["comparisons"][0];
  EXPECT_EQ(row["verdict"], "slower");
  EXPECT_NEAR(row["ratio"].get<double>(), 1 / 1.15, 0.02);
  EXPECT_LT(row["ci_high"].get<double>(), 1 / 1.02);
  EXPECT_EQ(row["runs_a"], nlohmann::json::array({1}));
  bool cpu_differs = false;
  for (const auto& f : j["environment"])
    if (f["field"] == "cpu_model") cpu_differs = f["differs"].get<bool>();
  EXPECT_TRUE(cpu_differs);
  EXPECT_EQ(j["method"]["tolerance"], 0.02);
  EXPECT_EQ(j["method"]["detect"], 0.10);
  // One run per side, no earlier runs: what the comparison could resolve is unknown.
  EXPECT_TRUE(row["detectable_change"].is_null());
  EXPECT_TRUE(row["runs_per_side_to_detect"].is_null());
}

TEST_F(CompareCli, ReplicatesSayWhatTheComparisonCouldResolve) {
  // Three runs per tag, runs a few % apart, no real difference: the verdict is "no significant
  // difference", and the resolution says how large a change these runs could have missed.
  SyntheticRun s;
  const double offsets[] = {1.00, 1.04, 0.97};
  for (int r = 0; r < 3; ++r) {
    s.tag = "a";
    s.seed = 10 + r;
    s.mean_s = 0.010 * offsets[r];
    store(db(), s);
    s.tag = "b";
    s.seed = 20 + r;
    s.mean_s = 0.010 * offsets[(r + 1) % 3];
    store(db(), s);
  }
  const std::string args = "compare --db " + db() + " --tag a --tag b --all-runs --detect 0.05";
  Result r = plumb(args);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("resolution (changes called 95 times in 100)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("with 3 + 3 runs varying "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("a 5.0% change needs "), std::string::npos) << r.out;
  Result j = plumb(args + " --json");
  const auto row = nlohmann::json::parse(j.out)["comparisons"][0];
  EXPECT_GT(row["detectable_change"].get<double>(), 0.05);
  EXPECT_GT(row["runs_per_side_to_detect"].get<int>(), 3);
}

TEST_F(CompareCli, ToleranceDecidesASmallDifference) {
  store_pair(1.03);  // 3% slower, quiet samples
  EXPECT_EQ(plumb("compare --db " + db() + " 1 2").code, 1);
  Result wide = plumb("compare --db " + db() + " 1 2 --tolerance 0.05");
  EXPECT_EQ(wide.code, 0) << wide.out;
  EXPECT_NE(wide.out.find("no significant difference"), std::string::npos) << wide.out;
}

TEST_F(CompareCli, TwoDatabasesAndWhereFilters) {
  SyntheticRun s;
  store(file("a.db"), s);
  s.seed = 3;
  store(file("b.db"), s);
  Result dbs = plumb("compare " + file("a.db") + " " + file("b.db"));
  EXPECT_EQ(dbs.code, 0) << dbs.err;
  EXPECT_NE(dbs.out.find("A = a.db"), std::string::npos) << dbs.out;

  s.threads = 4;
  s.mean_s = 0.004;
  store(file("a.db"), s);
  Result threads = plumb("compare --db " + file("a.db") +
                         " --where-a threads=1 --where-b "
                         "threads=4");
  EXPECT_EQ(threads.code, 0) << threads.err;
  EXPECT_NE(threads.out.find("faster"), std::string::npos) << threads.out;
  EXPECT_NE(threads.out.find("threads: 1 -> 4"), std::string::npos) << threads.out;
}

// plumb dist worlds compare like runs: matched on their setting (workload, workers, link,
// batch and threads per worker, buckets, overlap), from the slowest worker's step times.
TEST_F(CompareCli, DataParallelWorldsCompareLikeRuns) {
  const auto world = [](double step_s, int workers, const std::string& link, uint64_t seed) {
    store::StoredDistWorld w;
    w.started_at = "2026-01-01T00:00:00Z";
    w.workload = "resnet50";
    w.workers = workers;
    w.link = link;
    w.batch_per_worker = 4;
    w.bucket_bytes = 25 << 20;
    w.throughput_unit = "images/s";
    w.step_mean_s = step_s;
    w.throughput = 4.0 * workers / step_s;
    w.environment = testing::synthetic_environment(SyntheticRun{});
    std::vector<double> steps;
    for (int i = 0; i < 20; ++i)
      steps.push_back(step_s * (1 + 0.005 * static_cast<double>((i * 7 + seed) % 5) - 0.01));
    w.document = {{"step_s", steps}, {"units_per_step", 4.0 * workers}};
    return w;
  };
  {
    auto a = store::ResultsStore::open(file("a.db"));
    a->save_dist_world(world(1.50, 2, "none", 1));
    a->save_dist_world(world(2.40, 2, "1gbit", 1));
    auto b = store::ResultsStore::open(file("b.db"));
    b->save_dist_world(world(1.50, 2, "none", 2));
    b->save_dist_world(world(2.40 * 1.2, 2, "1gbit", 2));  // B's link world 20% slower
  }
  Result r = plumb("compare " + file("a.db") + " " + file("b.db") + " --json");
  EXPECT_EQ(r.code, 1) << r.err;  // a slowdown
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["comparisons"].size(), 2u) << r.out;
  std::map<std::string, std::string> verdicts;
  for (const auto& row : j["comparisons"]) verdicts[row["setting"]] = row["verdict"];
  EXPECT_EQ(verdicts.at("data-parallel workers=2 link=1gbit batch/worker=4 threads/worker=1 "
                        "bucket=26214400 overlap=on"),
            "slower");
  EXPECT_NE(verdicts.at("data-parallel workers=2 link=none batch/worker=4 threads/worker=1 "
                        "bucket=26214400 overlap=on"),
            "slower");
}

TEST_F(CompareCli, BadUsageExitsTwoWithOneLine) {
  store_pair(1.0);
  std::ofstream(file("junk.db")) << "not a database";
  SyntheticRun elsewhere;
  elsewhere.workload = "fake/elsewhere";
  store(file("other.db"), elsewhere);
  const std::string in = " --db " + db();
  expect_usage_error("compare" + in + " 1 99", "run 99 is not in");
  expect_usage_error("compare" + in + " 1 1", "both select run 1");
  expect_usage_error("compare" + in + " --tag a --tag a", "both select run 1");
  expect_usage_error("compare " + db() + " " + file("other.db"), "no workload setting");
  expect_usage_error("compare " + db() + " " + file("junk.db"), "junk.db");
  expect_usage_error("compare " + db() + " " + file("missing.db"), "missing.db");
  expect_usage_error("compare" + in + " 1", "two run ids");
  expect_usage_error("compare" + in + " 1 " + file("other.db"), "not one of each");
  expect_usage_error("compare" + in, "nothing to compare");
  expect_usage_error("compare" + in + " --tag a --tag nope", "selects no runs");
  expect_usage_error("compare" + in + " 1 2 --tolerance 2", "--tolerance");
  expect_usage_error("compare" + in + " 1 2 --detect 0.01", "--detect");
  expect_usage_error("compare" + in + " --where-a threads --where-b threads=2", "FIELD=VALUE");
}

TEST_F(CompareCli, InjectedDelayIsDetectedAndNeverSilent) {
  const std::string run = quick_run_args() + " --db " + db();
  ASSERT_EQ(plumb(run).code, 0);
  // The child plumb inherits the variable.
  ASSERT_EQ(setenv("PLUMB_INJECT_STEP_DELAY_MS", "2", 1), 0);
  Result delayed = plumb(run);
  ASSERT_EQ(setenv("PLUMB_INJECT_STEP_DELAY_MS", "soon", 1), 0);
  Result malformed = plumb(run);
  unsetenv("PLUMB_INJECT_STEP_DELAY_MS");
  ASSERT_EQ(delayed.code, 0) << delayed.err;
  EXPECT_NE(delayed.err.find("testing aid"), std::string::npos) << delayed.err;
  EXPECT_EQ(malformed.code, 2) << malformed.err;
  EXPECT_NE(malformed.err.find("PLUMB_INJECT_STEP_DELAY_MS=soon"), std::string::npos)
      << malformed.err;
  Result r = plumb("compare --db " + db() + " 1 2");
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("run 2 was slowed on purpose"), std::string::npos) << r.out;
  Result exported = plumb("export --db " + db());
  EXPECT_NE(exported.out.find("PLUMB_INJECT_STEP_DELAY_MS adds 2 ms"), std::string::npos);
}

}  // namespace
}  // namespace plumb
