// The one error-against-fp32 function (run/error_against_fp32.h): its metric policy on tensors
// and tokens, its reference setting, and its measurement on a floating and a token workload.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "plumb/core/outcome.h"
#include "plumb/run/error_against_fp32.h"
#include "plumb/workloads/all_workloads.h"
#include "workload_test_util.h"

namespace plumb {
namespace {

// The error of `dtype` against the reference, in the reference's setting.
run::ErrorAgainstFp32 error_in(const run::Fp32Reference& reference, Dtype dtype) {
  run::RunOptions o = reference.setting();
  o.dtype = dtype;
  return reference.error_of(o);
}

run::RunOptions error_test_options(const Workload& w) {
  run::RunOptions o;
  o.workload = w.info.name;
  o.mode = Mode::kInfer;
  o.config = testing::tiny_config(w);
  return o;
}

TEST(PrecisionError, TensorsAreScoredByRelativeL2) {
  const auto reference = torch::tensor({3.0, 4.0}).reshape({1, 2}).to(torch::kFloat);
  const auto outputs = torch::tensor({3.0, 4.5}).reshape({1, 2}).to(torch::kFloat);
  const auto e = run::compare_outputs({reference}, {outputs});
  EXPECT_STREQ(run::error_metric(e), run::kRelativeL2Metric);
  EXPECT_DOUBLE_EQ(run::error_value(e), 0.5 / 5.0);
  run::ErrorAgainstFp32 measured;
  measured.outcome = Outcome::success();
  measured.metric = run::error_metric(e);
  measured.value = run::error_value(e);
  EXPECT_EQ(run::error_text(measured), "relative_l2 1.00e-01");
}

TEST(PrecisionError, TokensAreScoredByTheShareThatDiffers) {
  const auto reference = torch::tensor({1, 2, 3, 4}, torch::kLong).reshape({2, 2});
  const auto outputs = torch::tensor({1, 2, 3, 9}, torch::kLong).reshape({2, 2});
  const auto e = run::compare_outputs({reference}, {outputs});
  EXPECT_STREQ(run::error_metric(e), run::kTokenMismatchMetric);
  EXPECT_DOUBLE_EQ(run::error_value(e), 0.25);
  run::ErrorAgainstFp32 unmeasured;
  unmeasured.outcome = Outcome::failure(OutcomeState::kUnsupported, "why");
  EXPECT_EQ(run::error_text(unmeasured), "why");
}

TEST(PrecisionError, TheReferenceIsFp32ContiguousOnednnInInference) {
  run::RunOptions o;
  o.mode = Mode::kTrain;
  o.dtype = Dtype::kInt8;
  o.memory_format = MemoryFormat::kChannelsLast;
  o.engine = Engine::kNative;
  o.keep_fp32 = {"fc"};
  o.embedding_bits = 4;
  o.seed = 7;
  o.threads = 3;
  const auto r = run::fp32_reference_setting(o);
  EXPECT_EQ(r.mode, Mode::kInfer);
  EXPECT_EQ(r.dtype, Dtype::kFp32);
  EXPECT_EQ(r.memory_format, MemoryFormat::kContiguous);
  EXPECT_EQ(r.engine, Engine::kOnednn);
  EXPECT_TRUE(r.keep_fp32.empty());
  EXPECT_EQ(r.embedding_bits, 8);
  EXPECT_EQ(r.seed, 7u);
  EXPECT_EQ(r.threads, 3);
}

TEST(PrecisionError, AFloatingWorkloadIsMeasuredByRelativeL2) {
  const Workload& w = workloads::default_registry().get("autoenc");
  const run::Fp32Reference reference(w, error_test_options(w));
  ASSERT_TRUE(reference.captured()) << reference.note();
  EXPECT_STREQ(reference.metric(), run::kRelativeL2Metric);
  auto fp32 = reference.error_of(reference.setting());
  ASSERT_TRUE(fp32.outcome.ok());
  EXPECT_EQ(fp32.value, 0);
  const auto bf16 = error_in(reference, Dtype::kBf16);
  ASSERT_TRUE(bf16.outcome.ok()) << bf16.outcome.reason;
  EXPECT_EQ(bf16.metric, run::kRelativeL2Metric);
  EXPECT_DOUBLE_EQ(bf16.value, bf16.error.relative_l2);
  EXPECT_GT(bf16.value, 0);
  EXPECT_LT(bf16.value, 0.1);
  EXPECT_EQ(bf16.error.examples,
            static_cast<int64_t>(run::kErrorBatches) * reference.setting().config.get_int("batch"));
}

TEST(PrecisionError, ATokenWorkloadIsMeasuredByTokenMismatch) {
  const Workload& w = workloads::default_registry().get("seq2seq");
  const run::Fp32Reference reference(w, error_test_options(w));
  ASSERT_TRUE(reference.captured()) << reference.note();
  EXPECT_STREQ(reference.metric(), run::kTokenMismatchMetric);
  const auto bf16 = error_in(reference, Dtype::kBf16);
  ASSERT_TRUE(bf16.outcome.ok()) << bf16.outcome.reason;
  EXPECT_EQ(bf16.metric, run::kTokenMismatchMetric);
  EXPECT_DOUBLE_EQ(bf16.value, 1 - bf16.error.agreement);
  EXPECT_GE(bf16.value, 0);
  EXPECT_LE(bf16.value, 1);
}

// A generative model: token mismatch of the sequences each precision generates alone, and the
// relative L2 of its logits fed fp32's tokens (positions stay comparable). int8 quantizes
// every projection with its input's range taken per call, none calibrated.
TEST(PrecisionError, AGenerativeWorkloadIsMeasuredByTokensAndByItsLogitsAlongFp32s) {
  const Workload& w = workloads::default_registry().get("gpt2");
  const run::Fp32Reference reference(w, error_test_options(w));
  ASSERT_TRUE(reference.captured()) << reference.note();
  EXPECT_STREQ(reference.metric(), run::kTokenMismatchMetric);
  const auto fp32 = reference.error_of(reference.setting());
  ASSERT_TRUE(fp32.outcome.ok());
  EXPECT_EQ(fp32.error.measured_on, "logits");
  EXPECT_EQ(fp32.error.relative_l2, 0);
  EXPECT_EQ(fp32.value, 0);
  const auto int8 = error_in(reference, Dtype::kInt8);
  ASSERT_TRUE(int8.outcome.ok()) << int8.outcome.reason;
  EXPECT_EQ(int8.metric, run::kTokenMismatchMetric);
  EXPECT_EQ(int8.error.measured_on, "logits");
  EXPECT_DOUBLE_EQ(int8.value, 1 - int8.error.agreement);
  const Config c = testing::tiny_config(w);
  // Logits of every generated position of every request: [B, gen, V] per batch.
  EXPECT_EQ(int8.error.elements, static_cast<int64_t>(run::kErrorBatches) * c.get_int("batch") *
                                     c.get_int("gen") * c.get_int("vocab"));
  EXPECT_GT(int8.error.relative_l2, 0);
  EXPECT_LT(int8.error.relative_l2, 0.5);
  EXPECT_GT(int8.error.cosine, 0.8);
  ASSERT_FALSE(int8.quantized_layers.empty());
}

TEST(PrecisionError, GenerationsCompareTokensAndLogitsSeparately) {
  const auto tokens = torch::tensor({{1, 2, 3, 4}}, torch::kLong);  // [1, 4]
  const auto other = torch::tensor({{1, 2, 9, 9}}, torch::kLong);   // half differ
  const auto logits = torch::ones({1, 4, 3});                       // [1, 4, V]
  const auto e = run::compare_generations({tokens}, {logits}, {other}, {logits * 1.1});
  EXPECT_EQ(e.measured_on, "logits");
  EXPECT_EQ(e.agreement_kind, "token");
  EXPECT_DOUBLE_EQ(e.agreement, 0.5);
  EXPECT_NEAR(e.relative_l2, 0.1, 1e-6);  // 1.1 in fp32
  EXPECT_EQ(e.elements, 12);
}

}  // namespace
}  // namespace plumb
