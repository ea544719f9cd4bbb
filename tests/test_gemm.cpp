// The pieces of plumb gemm below the command: the census of GEMM shapes from profile rows, the
// exact i8-acc16 emulation (saturation appears where the arithmetic says it must, and the
// outlier split removes it), and GEMM timing of arbitrary shapes.
#include <stdexcept>

#include <gtest/gtest.h>

#include "plumb/analysis/gemm_census.h"
#include "plumb/platform/gemm_peaks.h"
#include "plumb/platform/int8_acc16.h"
#include "plumb/profile/op_profile.h"

namespace plumb {
namespace {

profile::OpStat row(const std::string& signature, double calls, double self_s,
                    const char* kind = profile::kCosted, double macs = 1) {
  // OpStat's fields in order: the name is the signature's first part.
  return {signature.substr(0, signature.find('|')),
          "",
          "",
          "",
          kind,
          signature,
          calls,
          self_s,
          0,
          0,
          macs,
          0,
          0};
}

TEST(GemmCensus, MergesShapesAcrossWorkloadsAndRanksThemByShareOfTime) {
  profile::StepProfile a, b;
  // a: an mm [8,32]x[32,16] (60% of a's operator time), a relu (10%), an addmm of another
  // shape (30%).
  a.ops = {row("aten::mm|Float[8,32]|Float[32,16]", 2, 0.6),
           row("aten::relu|Float[8,16]", 1, 0.1, profile::kUncosted, 0),
           row("aten::addmm|Float[16]|Float[4,32]|Float[32,16]|i1|i1", 1, 0.3)};
  // b: the same mm shape as bf16 (an addmm with the same M, N, K), 20% of b's time; the rest
  // in a composite row, and a GEMM-like row whose signature cannot be read.
  b.ops = {row("aten::addmm|BFloat16[16]|BFloat16[8,32]|BFloat16[32,16]|i1|i1", 1, 0.2),
           row("aten::linear|Float[8,32]|Float[16,32]|-", 1, 0.7, profile::kComposite, 0),
           row("aten::mystery_gemm|Float[8,8]", 1, 0.1)};
  const auto census = analysis::gemm_census({{"a", "infer", &a}, {"b", "train", &b}});
  EXPECT_EQ(census.sources, 2u);
  ASSERT_EQ(census.rows.size(), 2u);
  // 8x16x32: (0.6 + 0.2) / 2 sources; 4x16x32: 0.3 / 2.
  EXPECT_EQ(census.rows[0].shape, (GemmShape{1, 8, 16, 32}));
  EXPECT_DOUBLE_EQ(census.rows[0].share, 0.4);
  EXPECT_DOUBLE_EQ(census.rows[0].calls, 3);
  EXPECT_DOUBLE_EQ(census.rows[0].time_s, 0.8);
  EXPECT_EQ(census.rows[0].workloads, (std::vector<std::string>{"a infer", "b train"}));
  EXPECT_EQ(census.rows[1].shape, (GemmShape{1, 4, 16, 32}));
  EXPECT_DOUBLE_EQ(census.rows[1].share, 0.15);
  EXPECT_DOUBLE_EQ(census.gemm_share, 0.55);
  EXPECT_EQ(census.unread, (std::vector<std::string>{"aten::mystery_gemm"}));
}

TEST(GemmShape, IntensityAgainstTheSquareWithTheSameWork) {
  // 1024^3 in fp32: 2 * 1024^3 FLOPs over 3 * 1024^2 * 4 bytes = 170.67.
  const GemmShape square{1, 1024, 1024, 1024};
  EXPECT_NEAR(square.intensity(4), 2048.0 / 12, 1e-9);
  EXPECT_NEAR(square.square_intensity(4), square.intensity(4), 1e-9);
  // A skinny shape with the same MACs reuses far less: 2^30 MACs as 2^20 x 32 x 32.
  const GemmShape skinny{1, 1 << 20, 32, 32};
  EXPECT_DOUBLE_EQ(skinny.macs(), square.macs());
  EXPECT_LT(skinny.intensity(4), square.intensity(4) / 5);
  EXPECT_EQ((GemmShape{4, 2, 3, 5}).text(), "4 x 2x3x5");
  EXPECT_EQ((GemmShape{1, 2, 3, 5}).text(), "2x3x5");
}

TEST(Int8Acc16, ShortDotProductsCannotSaturate) {
  // K = 2 with 7-bit main weights: one pair, at most 2 * 255 * 64 = 32640 < 32767, so the
  // split path equals the 32-bit sum everywhere. The full 8-bit pair (up to 64770) may clip.
  platform::Acc16Options o;
  const auto e = platform::emulate_int8_acc16({1, 64, 64, 2}, o);
  EXPECT_EQ(e.outputs, 64 * 64);
  EXPECT_DOUBLE_EQ(e.split_saturated, 0.0);
  EXPECT_DOUBLE_EQ(e.split_relative_l2, e.acc32_relative_l2);
}

TEST(Int8Acc16, DeepProductsSaturateAndTheOutlierSplitRepairsThem) {
  platform::Acc16Options o;
  o.spill_every = 1 << 20;  // never spill: 16-bit sums over the whole of K = 4096
  const auto e = platform::emulate_int8_acc16({1, 256, 256, 4096}, o);
  EXPECT_GT(e.acc16_saturated, 0.05);
  EXPECT_GT(e.acc16_relative_l2, 5 * e.acc32_relative_l2);
  // Spilling often keeps the sums in range.
  o.spill_every = 2;
  const auto spilled = platform::emulate_int8_acc16({1, 256, 256, 4096}, o);
  EXPECT_LT(spilled.acc16_saturated, e.acc16_saturated);
  // The default interval with the 7-bit split is close to the exact 32-bit result.
  const auto split = platform::emulate_int8_acc16({1, 256, 256, 4096}, platform::Acc16Options{});
  EXPECT_GT(split.outlier_density, 0.0);
  EXPECT_LT(split.outlier_density, 0.5);
  EXPECT_LT(split.split_relative_l2, split.acc16_relative_l2);
  EXPECT_LT(split.split_relative_l2, 2 * split.acc32_relative_l2);
  // int8 quantization alone: about 1% on Gaussian data.
  EXPECT_GT(split.acc32_relative_l2, 1e-3);
  EXPECT_LT(split.acc32_relative_l2, 5e-2);
}

TEST(Int8Acc16, EightBitMainPartHasNoOutliers) {
  platform::Acc16Options o;
  o.main_bits = 8;
  const auto e = platform::emulate_int8_acc16({1, 32, 32, 512}, o);
  EXPECT_DOUBLE_EQ(e.outlier_density, 0.0);
  EXPECT_DOUBLE_EQ(e.split_relative_l2, e.acc16_relative_l2);
  o.spill_every = 3;
  EXPECT_THROW(platform::emulate_int8_acc16({1, 32, 32, 512}, o), std::invalid_argument);
}

TEST(GemmTiming, MeasuresAnyShapeAndRefusesWhatALibraryCannotRun) {
  // A small batched shape runs in fp32 on both engines and gives a positive rate.
  const GemmShape shape{3, 40, 24, 56};
  const auto blas = platform::measure_gemm("fp32", platform::GemmLibrary::kTorchMm, shape, 1, 0.01);
  ASSERT_TRUE(blas.outcome.ok()) << blas.outcome.reason;
  EXPECT_GT(blas.ops_per_s, 0);
  EXPECT_EQ(blas.implementation, "at::bmm");
  const auto dnnl = platform::measure_gemm("fp32", platform::GemmLibrary::kOneDnn, shape, 1, 0.01);
#if PLUMB_WITH_ONEDNN
  ASSERT_TRUE(dnnl.outcome.ok()) << dnnl.outcome.reason;
  EXPECT_GT(dnnl.ops_per_s, 0);
#else
  EXPECT_FALSE(dnnl.outcome.ok());
  EXPECT_NE(dnnl.outcome.reason.find("without oneDNN"), std::string::npos) << dnnl.outcome.reason;
#endif
  // LibTorch's mm has no bf16 kernel plumb counts: unsupported with the reason, no number.
  const auto bf16 = platform::measure_gemm("bf16", platform::GemmLibrary::kTorchMm, shape, 1, 0.01);
  EXPECT_FALSE(bf16.outcome.ok());
  EXPECT_EQ(bf16.ops_per_s, 0);
  EXPECT_NE(bf16.outcome.reason.find("oneDNN"), std::string::npos);
}

}  // namespace
}  // namespace plumb
