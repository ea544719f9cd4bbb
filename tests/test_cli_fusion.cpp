// plumb analyze fusion end to end: on a small resnet50 inference the convolution -> batch norm ->
// ReLU chain and the residual add -> ReLU are found with the counts the architecture implies,
// ranked with a projected saving, and realized against LibTorch's fused kernels; a profile stored
// before graph capture is refused with exit 2 and nothing written.
#include <nlohmann/json.hpp>

#include "cli_fixture.h"
#include "plumb/store/results_store.h"
#include "stored_profile_util.h"

namespace plumb::testing {
namespace {

TEST_F(Cli, FusionOnResnet50FindsConvBatchNormReluAndTheResidualAdd) {
  // A one-thread quick probe first, so the analysis reuses it.
  ASSERT_EQ(plumb("probe --quick --threads 1 --json --db " + db()).code, 0);
  const auto r = plumb(
      "analyze fusion resnet50 --mode infer --batch 1 --set image_size=64 --threads 1 --steps 1 "
      "--max-warmup-time 2 --check-seconds 0.05 --top 10 --json --db " +
      db());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.at("workloads").size(), 1u);
  const auto& w = j.at("workloads").at(0);
  EXPECT_GT(w.at("profile_id").get<int>(), 0);
  std::map<std::string, nlohmann::json> by_text;
  double previous = 1e300;
  for (const auto& p : w.at("patterns")) {
    by_text[p.at("pattern").get<std::string>()] = p;
    const double saving = p.at("projected_saving_s");
    EXPECT_LE(saving, previous) << "ranked by projected saving";
    previous = saving;
  }
  // ResNet-50: 53 convolutions each followed by batch norm; 33 of those by a ReLU (three per
  // bottleneck block of 16, plus the stem; the rest end at the residual add); 16 residual adds,
  // each fed by one batch norm, or two where the shortcut has a projection (4 blocks): 20.
  ASSERT_TRUE(by_text.count("conv2d -> batch_norm -> relu")) << r.out;
  EXPECT_EQ(by_text["conv2d -> batch_norm -> relu"]["count"], 33);
  ASSERT_TRUE(by_text.count("conv2d -> batch_norm -> add -> relu")) << r.out;
  const auto& residual = by_text["conv2d -> batch_norm -> add -> relu"];
  EXPECT_EQ(residual["count"], 20);
  EXPECT_GT(residual["projected_saving_s"].get<double>(), 0);
  EXPECT_EQ(residual["classes"],
            nlohmann::json({"gemm", "elementwise", "elementwise", "elementwise"}));
  // Realized on the recorded shapes: batch norm folded into the convolution.
  ASSERT_FALSE(residual["realized"].is_null()) << r.out;
  EXPECT_EQ(residual["realized"]["kind"], "conv_bn");
  EXPECT_GT(residual["realized"]["unfused_s"].get<double>(), 0);
  EXPECT_LT(residual["realized"]["max_abs_diff"].get<double>(), 1e-2);

  // A second call reads the stored profile and the stored checks: no new profile.
  const auto again = plumb("analyze fusion resnet50 --mode infer --threads 1 --json --db " + db());
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_NE(again.err.find("stored profile"), std::string::npos) << again.err;
  EXPECT_EQ(again.err.find("timing"), std::string::npos) << again.err;
}

TEST_F(Cli, FusionRefusesAProfileStoredBeforeGraphCapture) {
  int64_t id = 0;
  {
    auto store = store::ResultsStore::open(db());
    id = save_fake_profile(
        *store, FakeProfile("resnet50", "infer", 1, {FakeOp("aten::conv2d", "Conv", 0.01)}));
  }
  const std::string before = slurp(db());
  expect_usage_error("analyze fusion resnet50 --mode infer --threads 1 --db " + db(),
                     "re-profile with this version");
  const auto r = plumb("analyze fusion resnet50 --mode infer --threads 1 --db " + db());
  EXPECT_NE(r.err.find(fmt::format("profile {}", id)), std::string::npos) << r.err;
  EXPECT_EQ(slurp(db()), before) << "nothing written";
  expect_usage_error("analyze fusion resnet50 --max-nodes 1 --db " + db(), "--max-nodes");
  expect_usage_error("analyze fusion resnet50 --top 0 --db " + db(), "--top");
}

// Operator times come from the host clock and the roofs and fused kernels are the CPU's, so
// these commands refuse a GPU whether or not the machine has one, before the store is opened.
TEST_F(Cli, CommandsWithCpuFiguresRefuseAGpuDevice) {
  {
    auto store = store::ResultsStore::open(db());
    save_fake_profile(*store,
                      FakeProfile("resnet50", "infer", 1, {FakeOp("aten::conv2d", "Conv", 0.01)}));
  }
  const std::string before = slurp(db());
  const std::string tail = " --db " + db();
  expect_usage_error("analyze fusion resnet50 --mode infer --device cuda" + tail, "host clock");
  expect_usage_error("analyze fusion resnet50 --mode infer --device cuda" + tail, "CPU's roofs");
  expect_usage_error("profile autoenc --device cuda:0" + tail, "times kernel launches");
  expect_usage_error("roofline autoenc --device cuda" + tail, "host clock");
  expect_usage_error("gemm autoenc --device cuda" + tail, "CPU's GEMM libraries");
  expect_usage_error("memory autoenc --device cuda" + tail, "CUDA allocator");
  EXPECT_EQ(slurp(db()), before) << "nothing written";
}

}  // namespace
}  // namespace plumb::testing
