// plumb's weight-only int8 product (run/int8_weight_gemv.h): each vector path this CPU runs
// against the fp32 product of the dequantized weight, the codes' range, and that an int8
// generative model's decode tokens run it while its prompt runs oneDNN's int8 GEMM, both costed.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <string>
#include <vector>

#include "plumb/core/precision.h"
#include "plumb/profile/profiler.h"
#include "plumb/run/int8_weight_gemv.h"
#include "plumb/run/precision_session.h"
#include "plumb/run/runner.h"
#include "plumb/workloads/all_workloads.h"
#include "workload_test_util.h"

namespace plumb {
namespace {

using run::GemvIsa;

std::vector<GemvIsa> isas_this_cpu_runs() {
  std::vector<GemvIsa> isas;
  for (GemvIsa isa : {GemvIsa::kPortable, GemvIsa::kAvx2, GemvIsa::kAvx512})
    if (static_cast<int>(isa) <= static_cast<int>(run::widest_gemv_isa())) isas.push_back(isa);
  return isas;
}

TEST(Int8WeightGemv, EveryPathEqualsTheProductOfTheDequantizedWeight) {
  torch::manual_seed(3);
  // Inputs that are not a multiple of any vector width, outputs not a multiple of the 4-row
  // block, and row counts from a lone token to the kernel's limit.
  for (int64_t in : {5, 40, 777}) {
    for (int64_t out : {1, 13, 130}) {
      const auto weight = torch::randn({out, in});
      const run::Int8Rows rows = run::quantize_rows(weight);
      const auto dequantized = rows.codes.to(torch::kFloat) * rows.scales.unsqueeze(1);  // [O, I]
      for (int64_t n : {int64_t{1}, int64_t{3}, run::kInt8WeightGemvMaxRows}) {
        const auto x = torch::randn({n, in});
        const auto expected = torch::matmul(x, dequantized.t());  // [N, O]
        for (GemvIsa isa : isas_this_cpu_runs()) {
          const auto y = run::int8_weight_gemv(x, rows.codes, rows.scales, isa);
          ASSERT_EQ(y.sizes(), expected.sizes());
          // fp32 sums in another order: a few ulps of the row's magnitude.
          const double error = (y - expected).abs().max().item<double>();
          const double scale = expected.abs().max().item<double>() + 1;
          EXPECT_LT(error / scale, 1e-5)
              << run::gemv_isa_name(isa) << " in=" << in << " out=" << out << " rows=" << n;
        }
      }
    }
  }
  // Leading dimensions are kept: [2, 3, I] -> [2, 3, O], through the dispatcher.
  const auto weight = torch::randn({7, 24});
  const run::Int8Rows rows = run::quantize_rows(weight);
  const auto x = torch::randn({2, 3, 24});
  const auto y = run::int8_weight_linear(x, rows.codes, rows.scales);
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{2, 3, 7}));
  const auto dequantized = rows.codes.to(torch::kFloat) * rows.scales.unsqueeze(1);
  EXPECT_TRUE(torch::allclose(y, torch::matmul(x, dequantized.t()), 1e-4, 1e-5));
  // Wrong operands are refused, not read out of bounds.
  EXPECT_THROW(
      run::int8_weight_gemv(torch::randn({1, 23}), rows.codes, rows.scales, GemvIsa::kPortable),
      c10::Error);
}

TEST(Int8WeightGemv, CodesUseTheWholeRangeOfEachOutputChannel) {
  torch::manual_seed(4);
  const auto weight = torch::randn({6, 50}) * torch::arange(1, 7).unsqueeze(1);  // rows differ
  const run::Int8Rows rows = run::quantize_rows(weight);
  ASSERT_EQ(rows.codes.scalar_type(), torch::kChar);
  ASSERT_EQ(rows.scales.sizes(), (std::vector<int64_t>{6}));
  // Each row's largest weight gets code +-127, and rounding is within half a step.
  const auto largest = rows.codes.to(torch::kInt).abs().amax(1);
  EXPECT_TRUE(torch::equal(largest, torch::full({6}, 127, torch::kInt)));
  const auto step = rows.scales.unsqueeze(1);
  const auto error = (rows.codes.to(torch::kFloat) * step - weight).abs();
  EXPECT_TRUE((error <= step * 0.5 + 1e-6).all().item<bool>());
  // oneDNN's range where its kernels saturate, by the same rule at 63.
  const run::Int8Rows narrow = run::quantize_rows(weight, 63);
  EXPECT_TRUE(
      torch::equal(narrow.codes.to(torch::kInt).abs().amax(1), torch::full({6}, 63, torch::kInt)));
  const auto narrow_step = narrow.scales.unsqueeze(1);
  const auto narrow_error = (narrow.codes.to(torch::kFloat) * narrow_step - weight).abs();
  EXPECT_TRUE((narrow_error <= narrow_step * 0.5 + 1e-6).all().item<bool>());
  // A convolution's weight [O, I, kh, kw] keeps its shape, one scale per output channel.
  const run::Int8Rows conv = run::quantize_rows(torch::randn({4, 3, 2, 2}));
  EXPECT_EQ(conv.codes.sizes(), (std::vector<int64_t>{4, 3, 2, 2}));
  EXPECT_EQ(conv.scales.sizes(), (std::vector<int64_t>{4}));
  // An all-zero row keeps a positive scale and zero codes.
  const run::Int8Rows zero = run::quantize_rows(torch::zeros({2, 8}));
  EXPECT_TRUE((zero.scales > 0).all().item<bool>());
  EXPECT_EQ(zero.codes.abs().sum().item<int64_t>(), 0);
}

// gpt2 in int8 with a 20-token prompt: the prompt's 20 rows run oneDNN's dynamic int8 GEMM, each
// decode token's single row plumb's kernel; both are costed as the products they are, with
// the kernel's weight bytes counted at one byte per weight.
TEST(Int8WeightGemv, GenerativeDecodeRunsTheKernelAndPrefillTheGemm) {
  const Workload& w = workloads::default_registry().get("gpt2");
  run::RunOptions o;
  o.workload = w.info.name;
  o.mode = Mode::kInfer;
  o.dtype = Dtype::kInt8;
  o.config = testing::tiny_config(w);
  o.config.apply_settings({"batch=1", "positions=32", "prompt=20", "gen=3"});
  const auto result = profile::profile_workload(w, o, 1);
  ASSERT_EQ(result.status, run::RunStatus::kOk) << result.message;
  double kernel_macs = 0, kernel_weight_bytes = 0, gemm_macs = 0;
  for (const auto& op : result.profile.ops) {
    EXPECT_NE(op.kind, profile::kUncosted) << op.name;
    if (op.name == "plumb::int8_weight_linear") {
      EXPECT_EQ(op.kind, profile::kCosted);
      kernel_macs += op.macs;
      kernel_weight_bytes += op.bytes_read;
    }
    if (op.name == "quantized::linear_dynamic") gemm_macs += op.macs;
  }
  EXPECT_GT(kernel_macs, 0);
  EXPECT_GT(gemm_macs, 0);
  // Decode reads ~1 byte per MAC at one row (weights) plus the fp32 row, input and scales;
  // an fp32 weight would be 4 per MAC.
  EXPECT_LT(kernel_weight_bytes / kernel_macs, 2.0);
  EXPECT_GT(kernel_weight_bytes / kernel_macs, 1.0);
}

// A generative model's linear layers take their input range per call, so int8 traces one
// generation (prefill and decode calls) before packing; a calibrated model traces several
// batches for its ranges.
TEST(Int8WeightGemv, GenerativeModelsCalibrateOnOneGeneration) {
  const auto model_of = [](const std::string& name) {
    const Workload& w = workloads::default_registry().get(name);
    return w.build(testing::tiny_config(w), torch::kCPU);
  };
  const auto gpt2 = model_of("gpt2");
  EXPECT_TRUE(run::int8_linears_per_call(*gpt2));
  EXPECT_EQ(run::int8_calibration_batches(*gpt2), 1);
  const auto resnet = model_of("resnet50");
  EXPECT_FALSE(run::int8_linears_per_call(*resnet));
  EXPECT_EQ(run::int8_calibration_batches(*resnet), run::kCalibrationBatches);
}

}  // namespace
}  // namespace plumb
