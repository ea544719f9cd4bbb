// plumb memory end to end: the JSON a user scripts against, the capacity search under
// --memory-limit, an out-of-memory batch recorded while the sweep goes on, and bad input.
#include <gtest/gtest.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "cli_fixture.h"

namespace plumb::testing {
namespace {

constexpr const char* kTinyAutoenc = "autoenc --set hidden=16 --set latent=4 --threads 1";
const char* const kCategories[] = {
    "weights", "gradients", "optimizer_state", "feature_maps", "workspace", "input", "other"};

TEST_F(Cli, MemoryJsonHasPerBatchCategoriesSlopesAndLayers) {
  const auto doc =
      plumb_json(std::string("memory ") + kTinyAutoenc + " --mode train --batch 2,4,8");
  ASSERT_EQ(doc.at("batches").size(), 3u);
  Result info = plumb("info autoenc --set hidden=16 --set latent=4 --json");
  ASSERT_EQ(info.code, 0) << info.err;
  const int64_t params = nlohmann::json::parse(info.out).at("params").get<int64_t>();
  int64_t expected_batch = 2;
  for (const auto& entry : doc.at("batches")) {
    EXPECT_EQ(entry.at("batch"), expected_batch);
    expected_batch *= 2;
    EXPECT_EQ(entry.at("status"), "ok");
    int64_t sum_at_peak = 0;
    for (const char* c : kCategories) {
      ASSERT_TRUE(entry.at(c).is_number_integer()) << c;
      sum_at_peak += entry.at("at_total_peak").at(c).get<int64_t>();
    }
    EXPECT_EQ(entry.at("total_peak").get<int64_t>(), sum_at_peak);
    // autoenc has no buffers: weights and gradients are the parameters, Adagrad keeps one
    // accumulator per parameter.
    EXPECT_EQ(entry.at("weights").get<int64_t>(), params * 4);
    EXPECT_EQ(entry.at("gradients").get<int64_t>(), params * 4);
    EXPECT_EQ(entry.at("optimizer_state").get<int64_t>(), params * 4);
    EXPECT_GT(entry.at("feature_maps").get<int64_t>(), 0);
  }
  const auto& slopes = doc.at("slopes");
  EXPECT_EQ(slopes.at("weights").at("bytes_per_example").get<double>(), 0.0);
  EXPECT_GT(slopes.at("feature_maps").at("bytes_per_example").get<double>(), 0.0);
  EXPECT_GT(slopes.at("feature_maps").at("r_squared").get<double>(), 0.99);
  EXPECT_GT(slopes.at("input").at("bytes_per_example").get<double>(), 0.0);
  ASSERT_FALSE(doc.at("feature_map_layers").empty());
  EXPECT_FALSE(doc.at("feature_map_layers")[0].at("layer").get<std::string>().empty());
  // Stored: export lists the three passes.
  Result exported = plumb("export --db " + db() + " --format json");
  ASSERT_EQ(exported.code, 0) << exported.err;
  EXPECT_EQ(nlohmann::json::parse(exported.out).at("memory_profiles").size(), 3u);
}

TEST_F(Cli, MemoryLimitPredictsTheLargestBatchAndVerifiesIt) {
  Result first = plumb(std::string("memory ") + kTinyAutoenc + " --batch 2,4 --json --db " + db());
  ASSERT_EQ(first.code, 0) << first.err;
  const auto total = nlohmann::json::parse(first.out).at("slopes").at("total_peak");
  const double slope = total.at("bytes_per_example").get<double>();
  const double intercept = total.at("intercept_bytes").get<double>();
  ASSERT_GT(slope, 0);
  // A budget for about 40.5 examples.
  const auto limit = static_cast<int64_t>(intercept + 40.5 * slope);
  const auto doc = plumb_json(std::string("memory ") + kTinyAutoenc +
                              " --batch 2,4 --memory-limit " + std::to_string(limit));
  const auto cap = doc.at("memory_limit");
  EXPECT_EQ(cap.at("limit_bytes").get<int64_t>(), limit);
  EXPECT_GT(cap.at("batch1_bytes").get<int64_t>(), 0);
  EXPECT_EQ(cap.at("predicted_batch").get<int64_t>(), 40);
  // The answer is the largest batch that fits: the next one was measured over the limit.
  const int64_t fits = cap.at("largest_fitting_batch").get<int64_t>();
  EXPECT_EQ(cap.at("smallest_failing_batch").get<int64_t>(), fits + 1);
  EXPECT_EQ(cap.at("verified_batch").get<int64_t>(), fits);
  EXPECT_LE(cap.at("verified_total_peak").get<int64_t>(), limit);
  int64_t over = 0;
  for (const auto& b : doc.at("batches")) {
    if (b.at("batch") == fits + 1 && b.at("status") == "ok") over = b.at("total_peak");
    if (b.at("batch") == fits && b.at("limit_bytes") == limit) {
      EXPECT_EQ(b.at("status"), "ok");
    }
  }
  EXPECT_GT(over, limit);
}

TEST_F(Cli, MemoryOutOfMemoryBatchIsRecordedAndTheSweepGoesOn) {
  // 10^6 examples of 10^5 pixels (400 GB) cannot fit; batches 2 and 4 still run.
  Result r = plumb(std::string("memory ") + kTinyAutoenc +
                   " --set pixels=100000 --batch 2,1000000,4 --json --db " + db());
  EXPECT_EQ(r.code, 1) << r.err;
  const auto batches = nlohmann::json::parse(r.out).at("batches");
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[0].at("status"), "ok");
  EXPECT_EQ(batches[1].at("status"), "out_of_memory");
  EXPECT_TRUE(batches[1].at("total_peak").is_null());
  EXPECT_NE(batches[1].at("message").get<std::string>().find("out of memory"), std::string::npos);
  EXPECT_EQ(batches[2].at("status"), "ok");
}

TEST_F(Cli, MemoryBadInputIsAClearUsageError) {
  const std::string base = std::string("memory ") + kTinyAutoenc + " --db " + db();
  expect_usage_error(base + " --batch 0,2", "--batch");
  expect_usage_error(base + " --batch 2,-4", "--batch");
  expect_usage_error(base + " --batch 2,2", "--batch");
  expect_usage_error(base + " --memory-limit lots", "--memory-limit 'lots'");
  expect_usage_error(base + " --memory-limit 8XB", "unknown unit");
  expect_usage_error(base + " --memory-limit 0", "positive");
  expect_usage_error(base + " --mode sideways", "sideways");
  expect_usage_error(base + " --device cuda", "CPU allocator");
  expect_usage_error(base + " --warmup-steps 0", "--warmup-steps");
  // Nothing was measured, so nothing was written.
  EXPECT_FALSE(fs::exists(db()));
  // A budget below batch 1 names what batch 1 needs; the passes measured are kept.
  Result r = plumb(base + " --batch 1,2 --memory-limit 1KiB");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("below what autoenc train needs at batch 1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("raise the limit to at least"), std::string::npos) << r.err;
  Result exported = plumb("export --db " + db() + " --format json");
  ASSERT_EQ(exported.code, 0) << exported.err;
  EXPECT_EQ(nlohmann::json::parse(exported.out).at("memory_profiles").size(), 2u);
}

}  // namespace
}  // namespace plumb::testing
