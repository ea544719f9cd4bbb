// Registry, configuration and name-suggestion tests: the interface every workload shares.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "plumb/core/config.h"
#include "plumb/core/errors.h"
#include "plumb/core/registry.h"
#include "plumb/core/text.h"
#include "plumb/workloads/all_workloads.h"
#include "usage_error_check.h"
#include "workload_test_util.h"

namespace plumb {
namespace {

Workload fake(const std::string& name, std::vector<std::string> suites) {
  Workload w = testing::test_workload_shell(name, "a fake", 4, 1, std::move(suites));
  w.build = [](const Config&, const torch::Device&) -> std::unique_ptr<Model> { return nullptr; };
  return w;
}

TEST(Registry, ListsBySuiteInRegistrationOrder) {
  Registry r;
  r.add(fake("alpha", {"s1"}));
  r.add(fake("beta", {"s1", "s2"}));
  r.add(fake("gamma", {"s2"}));
  ASSERT_EQ(r.list().size(), 3u);
  auto s2 = r.list("s2");
  ASSERT_EQ(s2.size(), 2u);
  EXPECT_EQ(s2[0]->info.name, "beta");
  EXPECT_EQ(s2[1]->info.name, "gamma");
  EXPECT_EQ(r.suites(), (std::vector<std::string>{"s1", "s2"}));
}

TEST(Registry, ListsSeveralSuitesOnceEachInRegistrationOrder) {
  Registry r;
  r.add(fake("alpha", {"s1"}));
  r.add(fake("beta", {"s1", "s2"}));
  r.add(fake("gamma", {"s2"}));
  r.add(fake("delta", {"s3"}));
  auto both = r.list("s2,s1");
  ASSERT_EQ(both.size(), 3u);  // beta is in both suites and listed once
  EXPECT_EQ(both[0]->info.name, "alpha");
  EXPECT_EQ(both[1]->info.name, "beta");
  EXPECT_EQ(both[2]->info.name, "gamma");
  EXPECT_THROW(r.list("s1,s9"), UsageError);  // every named suite must exist
}

TEST(Registry, UnknownWorkloadSuggestsCloseNames) {
  Registry r;
  r.add(fake("resnet50", {"tbd"}));
  r.add(fake("seq2seq", {"fathom"}));
  expect_usage_error([&] { r.get("resnet5"); }, {"did you mean 'resnet50'"});
}

TEST(Registry, UnknownSuiteNamesValidOnes) {
  Registry r;
  r.add(fake("a", {"fathom"}));
  expect_usage_error([&] { r.list("fathm"); }, {"valid suites: fathom"});
}

TEST(Registry, DefaultRegistryHasTheFirstThreeWorkloads) {
  const auto names = workloads::default_registry().names();
  for (const char* n : {"autoenc", "seq2seq", "resnet50"})
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  for (const auto* w : workloads::default_registry().list()) {
    Config c = w->default_config();
    EXPECT_TRUE(c.has("batch")) << w->info.name;
    // Precision is a run setting (RunOptions::dtype), never a workload key.
    EXPECT_FALSE(c.has("dtype")) << w->info.name;
    EXPECT_FALSE(w->info.source.empty()) << w->info.name;
    EXPECT_GT(w->info.small_batch, 0) << w->info.name;
  }
}

TEST(Registry, SuiteConfigIsTheSmallBatchWithTheSuiteReductions) {
  Workload w = fake("alpha", {"s1"});
  w.info.small_batch = 2;
  w.default_config = [] {
    Config c;
    c.add_int("batch", 4, "batch").add_int("frames", 100, "frames");
    c.add_choice("dtype", "fp32", {"fp32"}, "dtype");
    return c;
  };
  w.info.suite_settings = {"frames=10"};
  const Config c = suite_config(w);
  EXPECT_EQ(c.get_int("batch"), 2);
  EXPECT_EQ(c.get_int("frames"), 10);
  EXPECT_EQ(w.default_config().get_int("frames"), 100);
}

TEST(Config, TypedOverridesAndValidation) {
  Config c;
  c.add_int("batch", 8, "b").add_double("lr", 0.1, "l").add_bool("flag", false, "f");
  c.add_choice("dtype", "fp32", {"fp32", "bf16"}, "d");
  c.set_from_text("batch", "16");
  c.set_from_text("lr", "0.5");
  c.set_from_text("flag", "true");
  c.set_from_text("dtype", "bf16");
  EXPECT_EQ(c.get_int("batch"), 16);
  EXPECT_DOUBLE_EQ(c.get_double("lr"), 0.5);
  EXPECT_TRUE(c.get_bool("flag"));
  EXPECT_EQ(c.get_string("dtype"), "bf16");
  EXPECT_THROW(c.set_from_text("batch", "0"), UsageError);
  EXPECT_THROW(c.set_from_text("batch", "-3"), UsageError);
  EXPECT_THROW(c.set_from_text("batch", "eight"), UsageError);
  EXPECT_THROW(c.set_from_text("lr", "nan"), UsageError);
  EXPECT_THROW(c.set_from_text("flag", "maybe"), UsageError);
  EXPECT_THROW(c.set_from_text("dtype", "fp64"), UsageError);
  expect_usage_error([&] { c.set_from_text("bach", "4"); }, {"did you mean 'batch'"});
}

TEST(Config, DifferencesAndJsonKeepDeclarationOrder) {
  Config d;
  d.add_int("batch", 8, "b").add_int("hidden", 256, "h");
  Config c = d;
  c.set_int("hidden", 128);
  EXPECT_EQ(c.differences_from(d), (std::vector<std::string>{"hidden=128"}));
  EXPECT_EQ(c.to_json().dump(), R"({"batch":8,"hidden":128})");
}

TEST(Text, EditDistanceAndSplit) {
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(split("1,2,,3", ','), (std::vector<std::string>{"1", "2", "", "3"}));
  EXPECT_EQ(suggestion_suffix("zzzzzz", {"resnet50"}), "");
}

// The serving commands, their progress lines and the report's serving tables all print times so.
TEST(Text, MillisecondsWithTheirDecimalsOrADash) {
  EXPECT_EQ(format_ms(0.0123456), "12.35 ms");
  EXPECT_EQ(format_ms(0.0123456, 1), "12.3 ms");
  EXPECT_EQ(format_ms(2.5, 0), "2500 ms");
  EXPECT_EQ(format_ms(std::nan("")), "-");
  EXPECT_EQ(format_ms(std::numeric_limits<double>::infinity()), "-");
}

}  // namespace
}  // namespace plumb
