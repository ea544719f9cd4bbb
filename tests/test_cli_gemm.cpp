// plumb gemm through the real binary: shapes read from a fresh profile (and from the stored one
// with --from-db), each measured per precision against the square reference, the int8 acc16
// emulation beside them, and bad input refused before anything runs.
#include <nlohmann/json.hpp>

#include "cli_fixture.h"

namespace plumb::testing {
namespace {

constexpr const char* kTinyGemmAutoenc =
    "gemm autoenc --batch 8 --set hidden=128 --set latent=4 --threads 1 --max-warmup-time 1 "
    "--top 2 --seconds 0.01 --square 64";

TEST_F(Cli, GemmMeasuresTheShapesAWorkloadRuns) {
  const auto j = plumb_json(std::string(kTinyGemmAutoenc) + " --dtypes fp32,int8");
  ASSERT_EQ(j.at("sources").size(), 1u);
  EXPECT_EQ(j.at("sources")[0].at("workload"), "autoenc");
  EXPECT_FALSE(j.at("sources")[0].at("reused").get<bool>());
  // autoenc is linear layers, every shape read. At hidden 128 they are 46-67% of the step on a
  // 2-core Zen 5 VM; at 16 they were 13-20%, and one CI run's profile (a slow non-GEMM call in
  // a step of a few hundred microseconds) put them at 3%.
  EXPECT_GT(j.at("gemm_share").get<double>(), 0.05);
  EXPECT_LE(j.at("gemm_share").get<double>(), 1.0);
  EXPECT_TRUE(j.at("unread_ops").empty());
  const auto& shapes = j.at("shapes");
  ASSERT_GE(shapes.size(), 2u);
  double share = 2;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const auto& s = shapes[i];
    EXPECT_LE(s.at("share").get<double>(), share);  // ranked
    share = s.at("share").get<double>();
    EXPECT_EQ(s.at("shape").at("m"), 8);  // batch 8 rows through every linear layer
    if (i >= 2) {
      EXPECT_FALSE(s.contains("by_dtype"));  // beyond --top: listed, not measured
      continue;
    }
    const auto& fp32 = s.at("by_dtype").at("fp32");
    ASSERT_TRUE(fp32.at("supported").get<bool>());
    EXPECT_GT(fp32.at("flops").get<double>(), 0);
    EXPECT_GT(fp32.at("of_square").get<double>(), 0);
    EXPECT_TRUE(s.at("by_dtype").contains("int8"));
    const auto& acc16 = s.at("int8_acc16");
    EXPECT_GT(acc16.at("acc32_relative_l2").get<double>(), 0);
    EXPECT_TRUE(acc16.at("speed").is_null());
  }
  EXPECT_TRUE(j.at("square").at("by_dtype").at("fp32").at("supported").get<bool>());

  // --from-db reads the profile just stored instead of profiling again.
  const auto again =
      plumb(std::string(kTinyGemmAutoenc) + " --dtypes fp32 --from-db --json --db " + db());
  ASSERT_EQ(again.code, 0) << again.err;
  const auto k = nlohmann::json::parse(again.out);
  EXPECT_TRUE(k.at("sources")[0].at("reused").get<bool>());
  EXPECT_EQ(k.at("sources")[0].at("profile_id"), j.at("sources")[0].at("profile_id"));
  EXPECT_EQ(k.at("shapes").size(), shapes.size());
}

TEST_F(Cli, GemmBadInputIsAUsageError) {
  expect_usage_error("gemm --db " + db(), "name one or more workloads");
  expect_usage_error(std::string(kTinyGemmAutoenc) + " --dtypes fp32,int4 --db " + db(),
                     "valid: fp32, bf16, fp16, int8");
  expect_usage_error(std::string(kTinyGemmAutoenc) + " --acc16-spill 3 --db " + db(),
                     "--acc16-spill");
  expect_usage_error("gemm no_such_model --db " + db(), "no_such_model");
}

}  // namespace
}  // namespace plumb::testing
