// plumb sweep / merge / analyze end to end: a sweep killed mid-way resumes without losing or
// repeating a point, two shards merged equal the unsharded sweep, the analyses print their
// tables, and bad specs, shards and merges are refused with clear errors.
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <set>
#include <thread>

#include <SQLiteCpp/SQLiteCpp.h>
#include <nlohmann/json.hpp>

#include "cli_fixture.h"
#include "stored_identity.h"

namespace plumb::testing {
namespace {

// 8 tiny paradnn_fc points of about half a second each.
constexpr const char* kGrid =
    "paradnn_fc --grid nodes=16,32 --grid batch=8,16 --grid layers=1,2 --set input=32 "
    "--set output=8 --max-time 0.3 --max-warmup-time 0.3 --no-probe";

class SweepCli : public Cli {
 public:
  Result run(const std::string& args) { return plumb(args); }
  // Every stored sweep point by key (fails the test on a duplicated key).
  std::map<std::string, nlohmann::json> points(const std::string& db) {
    Result r = plumb("export --format json --db " + db);
    EXPECT_EQ(r.code, 0) << r.err;
    std::map<std::string, nlohmann::json> out;
    const auto doc = nlohmann::json::parse(r.out);  // named: a range-for over a temporary dangles
    for (const auto& s : doc.at("sweeps"))
      for (const auto& p : s.at("points")) {
        EXPECT_EQ(out.count(p.at("key").get<std::string>()), 0u) << "duplicated point";
        out[p.at("key").get<std::string>()] = p;
      }
    return out;
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
};

int64_t count_points(const std::string& db) {
  try {
    SQLite::Database d(db, SQLite::OPEN_READONLY);
    return d.execAndGet("SELECT count(*) FROM sweep_points").getInt64();
  } catch (const std::exception&) {
    return 0;  // not created yet
  }
}

TEST_F(SweepCli, KilledMidWayResumesWithoutLosingOrRepeatingPoints) {
  const std::string pidfile = path("pid");
  std::system((std::string(PLUMB_BINARY) + " sweep " + kGrid + " --db " + db() + " >" + path("o1") +
               " 2>" + path("e1") + " & echo $! > " + pidfile)
                  .c_str());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (count_points(db()) < 3 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const pid_t pid = std::stoi(slurp(pidfile));
  ::kill(pid, SIGKILL);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const auto before = points(db());
  ASSERT_GE(before.size(), 3u);
  ASSERT_LT(before.size(), 8u) << "the sweep finished before it could be killed";

  Result r = run(std::string("sweep ") + kGrid + " --json --db " + db());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc.at("skipped").get<size_t>(), before.size());
  EXPECT_EQ(doc.at("ran").get<size_t>(), 8 - before.size());
  const auto after = points(db());
  ASSERT_EQ(after.size(), 8u);
  for (const auto& [key, p] : before) {  // untouched: same run, same time
    EXPECT_EQ(after.at(key).at("run_id"), p.at("run_id")) << key;
    EXPECT_EQ(after.at(key).at("finished_at"), p.at("finished_at")) << key;
  }
  for (const auto& [key, p] : after) {
    EXPECT_EQ(p.at("status"), "ok") << key;
    EXPECT_GT(p.at("metrics").at("examples_per_s").get<double>(), 0) << key;
    EXPECT_GT(p.at("metrics").at("flops_per_s").get<double>(), 0) << key;
  }
  // A third run has nothing left to do.
  Result again = run(std::string("sweep ") + kGrid + " --json --db " + db());
  EXPECT_EQ(nlohmann::json::parse(again.out).at("ran"), 0);

  Result heat = run("analyze heatmap --db " + db() +
                    " --x nodes --y batch --fix layers=2 --metric examples_per_s");
  ASSERT_EQ(heat.code, 0) << heat.err;
  EXPECT_NE(heat.out.find("batch \\ nodes"), std::string::npos) << heat.out;
  // Issue 7's acceptance command with nothing fixed (this sweep has no probe, so no
  // flops_util): one map per value of layers.
  Result maps =
      run("analyze heatmap --db " + db() + " --x nodes --y batch --metric examples_per_s");
  ASSERT_EQ(maps.code, 0) << maps.err;
  EXPECT_NE(maps.out.find("layers=1:"), std::string::npos) << maps.out;
  EXPECT_NE(maps.out.find("layers=2:"), std::string::npos) << maps.out;
  Result sens = run("analyze sensitivity --db " + db() + " --metric examples_per_s --json");
  ASSERT_EQ(sens.code, 0) << sens.err;
  EXPECT_EQ(nlohmann::json::parse(sens.out).at("weights").size(), 3u);
  Result box = run("analyze boxplot --db " + db() + " --metric flops_per_s");
  ASSERT_EQ(box.code, 0) << box.err;
  EXPECT_NE(box.out.find("paradnn_fc"), std::string::npos) << box.out;
}

TEST_F(SweepCli, TwoShardsMergedEqualTheUnshardedSweep) {
  const std::string a = path("a.db"), b = path("b.db"), merged = path("m.db");
  ASSERT_EQ(run(std::string("sweep ") + kGrid + " --shard 0/2 --db " + a).code, 0);
  ASSERT_EQ(run(std::string("sweep ") + kGrid + " --shard 1/2 --db " + b).code, 0);
  const auto pa = points(a), pb = points(b);
  EXPECT_EQ(pa.size(), 4u);
  EXPECT_EQ(pb.size(), 4u);
  Result m = run("merge --db " + merged + " " + a + " " + b);
  ASSERT_EQ(m.code, 0) << m.err;
  ASSERT_EQ(run(std::string("sweep ") + kGrid + " --db " + db()).code, 0);
  std::set<std::string> merged_keys, whole_keys;
  for (const auto& [k, p] : points(merged)) merged_keys.insert(k);
  for (const auto& [k, p] : points(db())) whole_keys.insert(k);
  EXPECT_EQ(merged_keys, whole_keys);
  EXPECT_EQ(merged_keys.size(), 8u);
  // Merging again adds nothing; the merged runs carry their samples.
  Result again = run("merge --db " + merged + " " + a);
  EXPECT_NE(again.out.find("0 point(s) added, 4 already present"), std::string::npos) << again.out;
  SQLite::Database d(merged, SQLite::OPEN_READONLY);
  EXPECT_GT(d.execAndGet("SELECT count(*) FROM samples").getInt64(), 8);
  // The shard comes from a job array's environment too.
  Result env =
      run(std::string("sweep ") + kGrid + " --name envshard --json --db " + path("env.db") +
          " 2>/dev/null; SLURM_ARRAY_TASK_ID=1 "
          "SLURM_ARRAY_TASK_COUNT=2 " +
          PLUMB_BINARY + " sweep " + kGrid + " --name slurm --json --db " + path("env.db"));
  EXPECT_NE(env.out.find("\"shard\": \"1/2\""), std::string::npos) << env.out;
}

// --dtype makes precision an axis: each point runs in its dtype, which its key, its stored
// parameters and its run record all carry.
TEST_F(SweepCli, PrecisionIsASweepAxis) {
  Result r =
      run("sweep paradnn_fc --grid batch=8,16 --set nodes=16 --set layers=1 --set input=32 --set "
          "output=8 --dtype fp32,bf16 --max-time 0.2 --max-warmup-time 0.2 --no-probe --db " +
          db());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto stored = points(db());
  ASSERT_EQ(stored.size(), 4u);
  ASSERT_TRUE(stored.count("mode=train dtype=bf16 batch=16"));
  const auto runs = nlohmann::json::parse(run("export --format json --db " + db()).out);
  std::map<int64_t, std::string> run_dtype;
  for (const auto& run_record : runs.at("runs"))
    run_dtype[run_record.at("id").get<int64_t>()] = run_record.at("dtype");
  for (const auto& [key, p] : stored) {
    const std::string dtype = p.at("params").at("dtype");
    EXPECT_NE(key.find("dtype=" + dtype), std::string::npos) << key;
    EXPECT_EQ(run_dtype.at(p.at("run_id").get<int64_t>()), dtype) << key;
  }
  expect_usage_error("sweep paradnn_fc --grid batch=8 --dtype fp32,int4 --no-probe --db " + db(),
                     "valid: fp32, bf16, fp16, int8");
}

TEST_F(SweepCli, ProfiledPointsLandOnTheRoofline) {
  // Without a probe there are no roofs: a clear error.
  ASSERT_EQ(run("sweep paradnn_fc --grid nodes=16,64 --set layers=1 --set input=32 --set "
                "output=8 --set batch=8 --max-time 0.2 --max-warmup-time 0.2 --measure "
                "throughput,profile --no-probe --db " +
                db())
                .code,
            0);
  expect_usage_error("analyze roofline --db " + db(), "no machine probe");
  ASSERT_EQ(run("probe --quick --db " + db()).code, 0);
  Result r = run("analyze roofline --json --db " + db());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  ASSERT_EQ(doc.at("points").size(), 2u);
  for (const auto& p : doc.at("points")) {
    EXPECT_GT(p.at("intensity").get<double>(), 0) << p;
    EXPECT_GT(p.at("achieved_flops").get<double>(), 0) << p;
    EXPECT_FALSE(p.at("bound").get<std::string>().empty()) << p;
  }
  // The profile's category shares are stored with each point.
  const auto stored = points(db());
  for (const auto& [key, p] : stored) {
    EXPECT_TRUE(p.at("metrics").contains("share_MatMul")) << p.at("metrics");
    EXPECT_GT(p.at("profile_id").get<int64_t>(), 0);
  }
}

TEST_F(SweepCli, BadSpecsShardsAndMergesAreRefused) {
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(path(name)) << text;
    return path(name);
  };
  const std::string base = " --no-probe --db " + db();
  expect_usage_error("sweep " +
                         write("u.yaml",
                               "workload: paradnn_fc\ngrid: {nodes: [16]}\n"
                               "colour: blue\n") +
                         base,
                     "unknown key 'colour' in the sweep spec");
  expect_usage_error("sweep " + write("e.yaml", "workload: paradnn_fc\ngrid: {nodes: []}\n") + base,
                     "empty list");
  expect_usage_error("sweep " +
                         write("r.yaml",
                               "workload: paradnn_fc\ngrid: {nodes: {from: 64, to: 32, "
                               "times: 2}}\n") +
                         base,
                     "has no values");
  expect_usage_error(
      "sweep " + write("k.yaml", "workload: paradnn_fc\ngrid: {nodez: [1, 2]}\n") + base,
      "unknown config key 'nodez'");
  expect_usage_error("sweep " +
                         write("b.yaml",
                               "workload: paradnn_fc\ngrid: {nodes: [1]}\n"
                               "budget: {max_tim: 3}\n") +
                         base,
                     "valid keys: max_time");
  expect_usage_error(std::string("sweep ") + kGrid + " --shard 2/2 --db " + db(), "--shard");
  expect_usage_error(std::string("sweep ") + kGrid + " --shard x --db " + db(), "--shard");
  expect_usage_error("sweep paradnn_fc --no-probe --db " + db(), "--grid");
  expect_usage_error("analyze heatmap --x nodes --y batch --fix layers --db " + db(),
                     "key=value (nodes=512, block=bottleneck)");
  EXPECT_FALSE(fs::exists(db()));

  // Same name, different spec: refused, and the stored sweep is untouched.
  ASSERT_EQ(run(std::string("sweep ") + kGrid + " --name s --db " + db()).code, 0);
  const auto stored = points(db());
  expect_usage_error(std::string("sweep ") + kGrid + " --grid input=64 --name s --db " + db(),
                     "different sweep named 's'");
  const std::string other = path("other.db");
  ASSERT_EQ(run(std::string("sweep ") + kGrid + " --max-time 0.2 --name s --db " + other).code, 0);
  expect_usage_error("merge --db " + db() + " " + other, "different sweep named 's'");
  EXPECT_EQ(points(db()).size(), stored.size());
  // Another schema version: refused.
  {
    SQLite::Database raw(other, SQLite::OPEN_READWRITE);
    raw.exec("PRAGMA user_version = 4");
  }
  expect_usage_error("merge --db " + db() + " " + other, "schema version 4");
  expect_usage_error("merge --db " + db() + " " + db(), "into itself");
}

// A sweep point stores plumb run's reproducer: run again, it lands on the point's canonical key
// (stored_identity.h).
TEST_F(SweepCli, APointsReproducerLandsOnItsKey) {
  const Result r = run(
      "sweep paradnn_fc --grid nodes=16 --set layers=1 --set input=32 --set output=8 --set batch=8 "
      "--threads 1 --max-time 0.3 --max-warmup-time 0.3 --no-probe --db " +
      db());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto point = newest_stored_identity(db(), "run");
  EXPECT_NE(point.key.find("nodes=16"), std::string::npos) << point.key;
  expect_reproducer_round_trip([this](const std::string& a) { return plumb(a); }, db(),
                               path("again.db"), "run");
}

}  // namespace
}  // namespace plumb::testing
