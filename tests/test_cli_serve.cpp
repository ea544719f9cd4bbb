// plumb serve end to end on small models: the Server search on DLRM reports the found rate, its
// tail latency within the bound and the batching that reached it, and stores every query; a
// bound below one query's latency is "not reachable" (exit 1, the floor stored); bad bounds,
// rates, waits and batches are usage errors (exit 2) that store nothing; a fixed-batch workload
// is served padded and says so; plumb compare matches serve sessions of two databases.
#include <set>

#include <SQLiteCpp/SQLiteCpp.h>
#include <nlohmann/json.hpp>

#include "cli_fixture.h"
#include "plumb/report/report.h"
#include "stored_identity.h"

namespace plumb::testing {
namespace {

constexpr char kSmallDlrm[] = "serve dlrm --set preset=small --threads 1 --duration 0.3";

TEST_F(Cli, ServeDlrmServerFindsTheRateThatKeepsTheBound) {
  const auto r =
      plumb(std::string(kSmallDlrm) + " --scenario server --p99 20ms --json --db " + db());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("workload"), "dlrm");
  EXPECT_EQ(j.at("scenario"), "server");
  EXPECT_DOUBLE_EQ(j.at("bound_ms").get<double>(), 20.0);
  EXPECT_DOUBLE_EQ(j.at("percentile").get<double>(), 99.0);
  const double found = j.at("found_qps");
  ASSERT_GT(found, 0);
  EXPECT_GT(j.at("failed_qps").get<double>(), found);
  // The rate cannot exceed the Offline ceiling measured in the same session.
  EXPECT_LE(found, j.at("offline_qps").get<double>());
  const auto& at = j.at("at_found");
  EXPECT_EQ(at.at("verdict"), "met");
  EXPECT_LE(at.at("tail_ms").get<double>(), 20.0);
  EXPECT_GE(at.at("queries").get<int64_t>(), 299);  // the fewest the p99 rule can pass on
  EXPECT_NEAR(at.at("achieved_qps").get<double>(), found, 0.25 * found);
  EXPECT_GE(at.at("mean_batch").get<double>(), 1.0);
  // Table 1's recommendation batch: the default the batcher was allowed.
  EXPECT_EQ(j.at("batching").at("max_batch"), 100);
  EXPECT_EQ(j.at("batching").at("batch_sizes").back(), 100);
  EXPECT_EQ(j.at("batching").at("service_ms").size(), j.at("batching").at("batch_sizes").size());
  EXPECT_NE(j.at("command").get<std::string>().find("--p99 20ms"), std::string::npos);
  // Every query of every measurement is stored.
  int64_t queries = 0;
  std::set<std::string> roles;
  std::set<int64_t> ids;  // the stored measurements' ids, as the JSON reports them
  for (const auto& m : j.at("measurements")) {
    ids.insert(m.at("id").get<int64_t>());
    EXPECT_EQ(count_rows(db(), "SELECT count(*) FROM serve_queries WHERE measurement_id = " +
                                   std::to_string(m.at("id").get<int64_t>())),
              m.at("queries").get<int64_t>());
    queries += m.at("queries").get<int64_t>();
    roles.insert(m.at("role").get<std::string>());
  }
  EXPECT_EQ(roles, (std::set<std::string>{"single-stream", "offline", "trial"}));
  EXPECT_EQ(ids.size(), j.at("measurements").size());
  EXPECT_EQ(ids.count(0), 0u);
  EXPECT_EQ(count_rows(db(), "SELECT count(*) FROM serve_queries"), queries);
  EXPECT_EQ(count_rows(db(),
                       "SELECT count(*) FROM serve_queries WHERE finish_s < start_s OR "
                       "start_s < arrival_s"),
            0);
}

TEST_F(Cli, ServeScenariosGiveTheFloorAndTheCeiling) {
  auto r = plumb(std::string(kSmallDlrm) + " --scenario single-stream --json --db " + db());
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_GT(j.at("single_stream_ms").at("p90").get<double>(), 0);
  EXPECT_EQ(j.at("measurements").size(), 1u);
  EXPECT_EQ(j.at("measurements")[0].at("mean_batch"), 1.0);
  r = plumb(std::string(kSmallDlrm) + " --scenario offline --max-batch 8 --json --db " + db());
  ASSERT_EQ(r.code, 0) << r.err;
  j = nlohmann::json::parse(r.out);
  EXPECT_GT(j.at("offline_qps").get<double>(), 0);
  // Offline batches take the size that serves the most queries per second, up to --max-batch.
  const int64_t limit = j.at("batching").at("offline_batch");
  EXPECT_GE(limit, 1);
  EXPECT_LE(limit, 8);
  EXPECT_EQ(j.at("measurements")[0].at("largest_batch"), limit);
  // A given rate serves once and judges the bound there.
  r = plumb(std::string(kSmallDlrm) + " --qps 200 --p90 50ms --db " + db());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("server"), std::string::npos);
  EXPECT_NE(r.out.find("p90"), std::string::npos);
  EXPECT_EQ(count_rows(db(), "SELECT count(*) FROM serve_sessions"), 3);
}

TEST_F(Cli, ServeBoundBelowOneQueryIsNotReachableAndTheFloorIsStored) {
  const auto r = plumb(std::string(kSmallDlrm) + " --p99 1us --db " + db());
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.out.find("not reachable: one query alone takes"), std::string::npos) << r.out;
  EXPECT_EQ(count_rows(db(), "SELECT count(*) FROM serve_sessions WHERE reachable = 0"), 1);
  EXPECT_EQ(count_rows(db(),
                       "SELECT count(*) FROM serve_measurements WHERE role = "
                       "'single-stream' AND p99_s > 0"),
            1);
}

TEST_F(Cli, ServeBadInputIsAUsageErrorAndStoresNothing) {
  const std::string base = std::string(kSmallDlrm) + " --db " + db();
  expect_usage_error(base + " --p99 0ms", "must be a positive duration");
  expect_usage_error(base + " --p99 -5ms", "must be a positive duration");
  expect_usage_error(base + " --p99 20", "give a number and a unit");
  expect_usage_error(base + " --p99 20ms --p90 10ms", "give one latency bound");
  expect_usage_error(base + " --qps 0", "--qps must be a positive number");
  expect_usage_error(base + " --qps -3", "--qps must be a positive number");
  expect_usage_error(base + " --max-wait -1ms", "--max-wait must be a positive duration");
  expect_usage_error(base + " --max-wait 0us", "--max-wait must be a positive duration");
  expect_usage_error(base + " --max-batch 0", "--max-batch must be at least 1");
  expect_usage_error(base + " --workers 0", "--workers must be at least 1");
  expect_usage_error(base + " --duration 0", "--duration must be a positive");
  expect_usage_error(base + " --scenario multi", "unknown scenario 'multi'");
  expect_usage_error(base + " --scenario offline --qps 10", "--qps sets the Server scenario");
  EXPECT_FALSE(fs::exists(db()));
}

TEST_F(Cli, ServeAFixedBatchWorkloadPadsToItsBatchAndSaysSo) {
  const auto j = plumb_json(
      "serve autoenc --batch 4 --set hidden=16 --set latent=4 --threads 1 --duration 0.2 "
      "--scenario offline --max-batch 32");
  EXPECT_TRUE(j.at("batching").at("fixed_batch").get<bool>());
  EXPECT_EQ(j.at("batching").at("max_batch"), 4);
  EXPECT_EQ(j.at("measurements")[0].at("largest_batch"), 4);
  EXPECT_NE(j.at("warnings").dump().find("padded to batch=4"), std::string::npos);
}

TEST_F(Cli, CompareMatchesServeSessionsOfTwoDatabases) {
  const std::string a = (dir_ / "a.db").string(), b = (dir_ / "b.db").string();
  for (const auto& path : {a, b}) {
    const auto r =
        plumb(std::string(kSmallDlrm) + " --scenario offline --max-batch 8 --db " + path);
    ASSERT_EQ(r.code, 0) << r.err;
  }
  const auto r = plumb("compare " + a + " " + b + " --json");
  ASSERT_LE(r.code, 1) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  bool found = false;
  for (const auto& row : j.at("comparisons"))
    if (row.at("workload") == "dlrm" && row.at("mode") == "serve offline") {
      found = true;
      EXPECT_GT(row.at("throughput_a").get<double>(), 0) << row;
      EXPECT_EQ(row.at("throughput_unit"), "queries/s");
      EXPECT_NE(row.at("verdict"), "not comparable") << row;
    }
  EXPECT_TRUE(found) << j.dump(1);
}

// serve takes --engine and --heap like plumb run: its reproducer and its key carry them, the heap
// policy is applied (the run's note says so; test_serve.cpp checks malloc's behaviour), and the
// reproducer, run again, lands on the same session key (stored_identity.h).
TEST_F(Cli, ServeAppliesHeapAndItsReproducerLandsOnTheSameKey) {
  const auto r =
      plumb(std::string(kSmallDlrm) +
            " --scenario offline --engine native --heap return --seed 2 --json --db " + db());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const std::string command = j.at("command");
  EXPECT_NE(command.find("--engine native --heap return --seed 2"), std::string::npos) << command;
  bool noted = false;
  for (const auto& w : j.at("warnings"))
    noted = noted || w.get<std::string>().rfind("--heap return:", 0) == 0;
  EXPECT_TRUE(noted) << j.at("warnings").dump();
  const auto stored = newest_stored_identity(db(), "serve");
  EXPECT_EQ(stored.command, command);
  EXPECT_NE(stored.key.find("engine=native heap=return scenario=offline"), std::string::npos)
      << stored.key;
  expect_reproducer_round_trip([this](const std::string& a) { return plumb(a); }, db(),
                               (dir_ / "again.db").string(), "serve");
}

}  // namespace
}  // namespace plumb::testing
