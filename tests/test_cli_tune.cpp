// plumb tune end to end on a tiny autoencoder: the report (stock, best, speedup with its
// interval, contributions, reproducer, headroom) is stored with its runs and the best's
// reproducer line runs the best's settings; a latency bound nothing meets, or a precision over
// the error budget, says so with the closest and exits 1 without touching what was stored;
// bad options are usage errors; plumb run takes and stores the engine and heap settings.
#include <algorithm>

#include <SQLiteCpp/SQLiteCpp.h>
#include <nlohmann/json.hpp>

#include "cli_fixture.h"

namespace plumb::testing {
namespace {

constexpr char kTinyTune[] =
    "tune autoenc --mode infer --batch 8 --set hidden=16 --set latent=4 --threads 2 "
    "--budget 8s --replicates 2 --max-time 1 --min-samples 5 --target-ci 0.5 "
    "--max-warmup-time 2";

TEST_F(Cli, TuneReportsStockBestSpeedupContributionsAndAReproducer) {
  const auto r = plumb(std::string(kTinyTune) + " --json --db " + db());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("workload"), "autoenc");
  EXPECT_TRUE(j.at("found").get<bool>());
  // fp32 is the reference: no error; the others measured or said why not.
  const auto& errors = j.at("precision_errors");
  ASSERT_EQ(errors.size(), 4u);
  EXPECT_EQ(errors.at(0).at("dtype"), "fp32");
  EXPECT_EQ(errors.at(0).at("error").get<double>(), 0.0);
  for (const auto& e : errors) {
    EXPECT_TRUE(e.at("error").is_number() || e.contains("note")) << e.dump();
    EXPECT_EQ(e.at("measure"), "relative_l2");  // the autoencoder's outputs are images
  }
  // The space: no convolutions, so no memory format; what is not searched says why.
  std::vector<std::string> factors;
  for (const auto& f : j.at("space").at("factors")) factors.push_back(f.at("name"));
  EXPECT_EQ(factors.front(), "threads");
  EXPECT_EQ(std::count(factors.begin(), factors.end(), "memory_format"), 0);
  EXPECT_GE(j.at("space").at("not_searched").size(), 3u);
  const auto& search = j.at("search");
  EXPECT_EQ(search.at("method"), "successive halving");
  EXPECT_GE(search.at("rungs").size(), 1u);
  EXPECT_EQ(search.at("rungs").at(0).at("points"), j.at("space").at("points"));
  // Stock and best, each measured by stored steady-state runs.
  for (const char* side : {"stock", "best"}) {
    const auto& s = j.at(side);
    ASSERT_EQ(s.at("run_ids").size(), 2u) << side;
    EXPECT_GT(s.at("throughput").get<double>(), 0) << side;
    for (const auto& id : s.at("run_ids"))
      EXPECT_EQ(count_rows(db(), "SELECT count(*) FROM runs WHERE status = 'ok' AND id = " +
                                     std::to_string(id.get<int64_t>())),
                1);
  }
  const auto& speedup = j.at("speedup");
  EXPECT_LE(speedup.at("ci_low").get<double>(), speedup.at("ratio").get<double>());
  EXPECT_GE(speedup.at("ci_high").get<double>(), speedup.at("ratio").get<double>());
  EXPECT_NEAR(
      speedup.at("ratio").get<double>(),
      j.at("best").at("throughput").get<double>() / j.at("stock").at("throughput").get<double>(),
      0.05 * speedup.at("ratio").get<double>());
  // One row per factor the search's best changed, each measured both ways.
  const auto& best_options = j.at("best").at("options");
  for (const auto& c : j.at("contributions")) {
    EXPECT_TRUE(c.contains("alone_from_stock") && c.contains("removed_from_best")) << c.dump();
    // A reverted factor is back at stock's value in the best configuration.
    const std::string factor = c.at("factor");
    if (c.at("reverted").get<bool>() && best_options.contains(factor)) {
      const auto& value = best_options.at(factor);
      EXPECT_EQ(value.is_string() ? value.get<std::string>() : value.dump(),
                c.at("stock").get<std::string>())
          << c.dump();
    }
  }
  // The best's place under the roof of its precision.
  const auto& headroom = j.at("headroom");
  ASSERT_TRUE(headroom.contains("best")) << headroom.dump();
  EXPECT_GT(headroom.at("flops_per_unit").get<double>(), 0);
  EXPECT_GT(headroom.at("best").at("achieved_flops").get<double>(), 0);
  // Stored, with the headline columns.
  EXPECT_EQ(count_rows(db(), "SELECT count(*) FROM tune_sessions WHERE found = 1 AND id = " +
                                 std::to_string(j.at("id").get<int64_t>())),
            1);

  // The reproducer line runs the best's settings.
  std::string command = j.at("best").at("command");
  ASSERT_EQ(command.rfind("plumb run autoenc", 0), 0u) << command;
  command = command.substr(std::string("plumb ").size());
  const auto rerun = plumb(command + " --json --db " + db());
  ASSERT_EQ(rerun.code, 0) << command << '\n' << rerun.err;
  const auto run = nlohmann::json::parse(rerun.out);
  const auto& ran = run.is_array() ? run.at(0) : run;
  for (const char* key : {"threads", "dtype", "memory_format", "engine", "heap", "batch"})
    EXPECT_EQ(ran.at(key).dump(), best_options.at(key).dump()) << key;

  // The report draws the tuning, with the reproducer.
  const std::string html = (dir_ / "r.html").string();
  ASSERT_EQ(plumb("report --db " + db() + " -o " + html).code, 0);
  const std::string page = slurp(html);
  EXPECT_NE(page.find("Tuning headroom"), std::string::npos);
  EXPECT_NE(page.find("Best configuration over stock"), std::string::npos);
  EXPECT_NE(page.find(j.at("best").at("command").get<std::string>()), std::string::npos);
  // characterize shows the headroom of a workload that has a tuning.
  const auto c = plumb(
      "characterize autoenc --quick --size tiny --dtypes int8 --threads 1 --json "
      "--db " +
      db());
  ASSERT_EQ(c.code, 0) << c.err;
  const auto tuning = nlohmann::json::parse(c.out).at("workloads").at(0).at("tuning");
  ASSERT_EQ(tuning.size(), 1u);
  EXPECT_EQ(tuning.at(0).at("mode"), "infer");
  EXPECT_EQ(tuning.at(0).at("tune_id"), j.at("id"));
  EXPECT_DOUBLE_EQ(tuning.at(0).at("speedup").get<double>(), speedup.at("ratio").get<double>());
}

TEST_F(Cli, TuneWithABoundNothingMeetsSaysSoReportsTheClosestAndKeepsTheStore) {
  ASSERT_EQ(plumb(quick_run_args() + " --db " + db()).code, 0);
  const int64_t runs_before = count_rows(db(), "SELECT count(*) FROM runs");
  const auto r = plumb(std::string(kTinyTune) + " --latency-bound 1us --dtypes fp32 --db " + db());
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.out.find("no configuration meets --latency-bound"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the closest is"), std::string::npos) << r.out;
  EXPECT_EQ(count_rows(db(), "SELECT count(*) FROM runs"), runs_before);
  EXPECT_EQ(count_rows(db(), "SELECT count(*) FROM tune_sessions WHERE found = 0"), 1);
}

TEST_F(Cli, TuneWithAStockPrecisionOverTheErrorBudgetExitsOne) {
  const auto r = plumb(std::string(kTinyTune) +
                       " --dtype bf16 --dtypes bf16 --max-error 0 --json --db " + db());
  EXPECT_EQ(r.code, 1) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_FALSE(j.at("found").get<bool>());
  EXPECT_NE(j.at("message").get<std::string>().find("no precision meets --max-error"),
            std::string::npos)
      << j.dump();
}

TEST_F(Cli, TuneAndRunRefuseBadSettings) {
  expect_usage_error(std::string(kTinyTune) + " --max-error -1 --db " + db(), "--max-error");
  expect_usage_error(std::string(kTinyTune) + " --budget 10 --db " + db(), "--budget");
  expect_usage_error(std::string(kTinyTune) + " --latency-bound fast --db " + db(),
                     "--latency-bound");
  expect_usage_error(std::string(kTinyTune) + " --dtypes fp64 --db " + db(), "unknown dtype");
  expect_usage_error(quick_run_args() + " --engine mkl --db " + db(), "unknown engine");
  expect_usage_error(quick_run_args() + " --heap jemalloc --db " + db(), "unknown heap policy");
  EXPECT_FALSE(fs::exists(db()));
}

TEST_F(Cli, RunStoresItsEngineAndHeap) {
  auto j = plumb_json(quick_run_args() + " --engine native --heap return");
  if (j.is_array()) j = j.at(0);
  EXPECT_EQ(j.at("engine"), "native");
  EXPECT_EQ(j.at("heap"), "return");
  EXPECT_NE(j.at("command").get<std::string>().find("--engine native --heap return"),
            std::string::npos);
  EXPECT_EQ(count_rows(db(),
                       "SELECT count(*) FROM runs WHERE engine = 'native' AND heap = "
                       "'return'"),
            1);
}

}  // namespace
}  // namespace plumb::testing
