// plumb precision and --dtype through the real binary: the JSON a user scripts against, a
// precision that cannot run becoming a stored "unsupported" record, and bad dtypes refused.
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "cli_fixture.h"

namespace plumb::testing {
namespace {

constexpr const char* kTinyPrecisionAutoenc =
    "autoenc --batch 8 --set hidden=16 --set latent=4 --threads 1 --max-time 1 --min-samples 5 "
    "--target-ci 0.5 --max-warmup-time 1";

TEST_F(Cli, PrecisionJsonComparesEachDtypeWithFp32) {
  const auto j =
      plumb_json(std::string("precision ") + kTinyPrecisionAutoenc + " --dtypes bf16,fp16,int8");
  EXPECT_EQ(j.at("mode"), "infer");
  const auto& p = j.at("precisions");
  ASSERT_EQ(p.size(), 4u);  // fp32 first: the reference, though not listed
  EXPECT_EQ(p[0].at("dtype"), "fp32");
  EXPECT_DOUBLE_EQ(p[0].at("error_vs_fp32").at("relative_l2").get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(p[0].at("speedup_vs_fp32").at("ratio").get<double>(), 1.0);
  EXPECT_EQ(p[1].at("dtype"), "bf16");
  EXPECT_EQ(p[1].at("status"), "ok");
  const double bf16_error = p[1].at("error_vs_fp32").at("relative_l2").get<double>();
  EXPECT_GT(bf16_error, 0);
  EXPECT_LT(bf16_error, 2e-2);
  EXPECT_GT(p[1].at("speedup_vs_fp32").at("ci_high").get<double>(),
            p[1].at("speedup_vs_fp32").at("ci_low").get<double>());
  EXPECT_EQ(p[2].at("dtype"), "fp16");
  EXPECT_EQ(p[2].at("status"), "unsupported");
  EXPECT_NE(p[2].at("message").get<std::string>().find("unsupported in fp16"), std::string::npos);
  EXPECT_EQ(p[3].at("dtype"), "int8");
  EXPECT_EQ(p[3].at("status"), "ok");
  EXPECT_GT(p[3].at("error_vs_fp32").at("relative_l2").get<double>(), 0);
  EXPECT_NE(p[3].at("command").get<std::string>().find("--dtype int8"), std::string::npos);
  EXPECT_FALSE(j.at("weight_outliers").empty());
  // Every timed run is stored with its dtype.
  const auto runs = nlohmann::json::parse(plumb("export --format json --db " + db()).out);
  std::vector<std::string> dtypes;
  for (const auto& run : runs.at("runs")) dtypes.push_back(run.at("dtype"));
  EXPECT_EQ(dtypes, (std::vector<std::string>{"fp32", "bf16", "fp16", "int8"}));
}

TEST_F(Cli, RunDtypeListRunsEachAndBadDtypesAreUsageErrors) {
  const auto j =
      plumb_json(std::string("run ") + kTinyPrecisionAutoenc + " --mode infer --dtype fp32,bf16");
  ASSERT_EQ(j.at("runs").size(), 2u);
  EXPECT_EQ(j.at("runs")[1].at("dtype"), "bf16");
  EXPECT_NE(j.at("runs")[1].at("command").get<std::string>().find("--dtype bf16"),
            std::string::npos);
  EXPECT_EQ(j.at("runs")[0].at("command").get<std::string>().find("--dtype"), std::string::npos);
  expect_usage_error(std::string("run ") + kTinyPrecisionAutoenc + " --dtype int4 --db " + db(),
                     "valid: fp32, bf16, fp16, int8");
  expect_usage_error(
      std::string("run ") + kTinyPrecisionAutoenc + " --dtype int8 --embedding-bits 6 --db " + db(),
      "--embedding-bits must be 8 or 4");
  expect_usage_error(std::string("run ") + kTinyPrecisionAutoenc + " --set dtype=bf16 --db " + db(),
                     "use --dtype bf16");
  expect_usage_error(
      std::string("run ") + kTinyPrecisionAutoenc + " --memory-format nhwc --db " + db(),
      "valid: contiguous, channels_last");
}

TEST_F(Cli, MemoryRecordsItsPrecision) {
  const auto j = plumb_json(
      "memory autoenc --mode infer --batch 8 --set hidden=16 --set latent=4 "
      "--dtype bf16");
  EXPECT_EQ(j.at("batches")[0].at("dtype"), "bf16");
  expect_usage_error("memory autoenc --dtype int4 --db " + db(), "valid: fp32, bf16, fp16, int8");
}

// A slower side in another precision is what the precision costs, not a regression: compare says
// so and does not exit 1 (the same slowdown within one precision does).
TEST_F(Cli, CompareAcrossPrecisionsIsNotARegression) {
  const std::string run =
      std::string("run ") + kTinyPrecisionAutoenc + " --mode infer --db " + db();
  ASSERT_EQ(plumb(run + " --dtype fp32").code, 0);
  ASSERT_EQ(setenv("PLUMB_INJECT_STEP_DELAY_MS", "5", 1), 0);
  const auto slowed = plumb(run + " --dtype bf16");
  unsetenv("PLUMB_INJECT_STEP_DELAY_MS");
  ASSERT_EQ(slowed.code, 0) << slowed.err;
  const auto r =
      plumb("compare --db " + db() + " --where-a dtype=fp32 --where-b dtype=bf16 --json");
  EXPECT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.at("comparisons").size(), 1u);
  EXPECT_EQ(j.at("comparisons")[0].at("verdict"), "slower");
  EXPECT_TRUE(j.at("comparisons")[0].at("precision_differs").get<bool>());
  EXPECT_NE(j.at("comparisons")[0].at("reason").get<std::string>().find("different precisions"),
            std::string::npos);
  EXPECT_FALSE(j.at("summary").at("slowdown_found").get<bool>());
}

}  // namespace
}  // namespace plumb::testing
