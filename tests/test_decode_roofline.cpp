// Decode on the memory roof: the bandwidth fit on synthetic data with a known answer, the ridge
// crossing and the knee by hand, a token's bytes counted by hand, the report's roof chart, and
// plumb analyze decode end to end on tiny GPT-2 sizes (sizes, batches, contexts, reuse) with its
// refusals (too few sizes, a workload without decode, a size beyond memory: exit 2, nothing
// stored).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "cli_fixture.h"
#include "plumb/analysis/decode_roofline.h"
#include "plumb/core/errors.h"
#include "plumb/jobs/decode_roofline_job.h"
#include "plumb/platform/environment.h"
#include "plumb/platform/probe.h"
#include "plumb/report/decode_roof_chart.h"
#include "plumb/workloads/all_workloads.h"
#include "report_fixture.h"

namespace plumb::testing {
namespace {

// A tiny decoder: 2 layers, width 16, 4 query heads of 4, 2 key/value heads.
TransformerShape tiny_shape() {
  TransformerShape s;
  s.layers = 2;
  s.d_model = 16;
  s.heads = 4;
  s.kv_heads = 2;
  s.head_dim = 4;
  s.ffn = 32;
  s.vocab = 50;
  s.max_positions = 64;
  s.linear_bias = true;
  s.learned_positions = true;
  s.tied_embedding = true;
  return s;
}

TEST(DecodeRoofline, FitOfAnExactLineRecoversBandwidthAndOverhead) {
  const double bw = 20e9, overhead = 50e-6;
  std::vector<double> bytes = {0.5e9, 1.4e9, 3.1e9, 6.2e9}, tpot;
  for (double b : bytes) tpot.push_back(overhead + b / bw);
  const auto fit = analysis::fit_decode_roof(bytes, tpot);
  EXPECT_NEAR(fit.bytes_per_s, bw, bw * 1e-9);
  EXPECT_NEAR(fit.overhead_s, overhead, 1e-12);
  EXPECT_NEAR(fit.r_squared, 1.0, 1e-12);
  EXPECT_EQ(fit.n, 4u);
}

TEST(DecodeRoofline, FitOfNoisyPointsHasRSquaredBelowOne) {
  const double bw = 20e9, overhead = 50e-6;
  std::vector<double> bytes = {0.5e9, 1.4e9, 3.1e9, 6.2e9}, tpot;
  const std::vector<double> noise = {1.03, 0.97, 1.02, 0.99};
  for (size_t i = 0; i < bytes.size(); ++i) tpot.push_back((overhead + bytes[i] / bw) * noise[i]);
  const auto fit = analysis::fit_decode_roof(bytes, tpot);
  EXPECT_LT(fit.r_squared, 1.0);
  EXPECT_GT(fit.r_squared, 0.95);
  EXPECT_NEAR(fit.bytes_per_s, bw, 0.1 * bw);
  // Time that falls as the bytes grow has no bandwidth.
  EXPECT_TRUE(std::isnan(analysis::fit_decode_roof({1, 2, 3}, {3, 2, 1}).bytes_per_s));
  EXPECT_THROW(analysis::fit_decode_roof({1, 2}, {1}), UsageError);
}

TEST(DecodeRoofline, RidgeCrossingByHand) {
  // bytes(b) = 1000 + 10 b, flops(b) = 100 b: 100 b / (1000 + 10 b) = 5 at b = 5000 / 50 = 100.
  const analysis::DecodeBatchLine line{1000, 10, 100};
  EXPECT_DOUBLE_EQ(analysis::ridge_batch(line, 5.0), 100.0);
  // A ridge of 10 FLOP/B is each request's own intensity: no batch reaches it.
  EXPECT_TRUE(std::isinf(analysis::ridge_batch(line, 10.0)));
  // The lines of a real shape reproduce decode_cost at any batch.
  const auto shape = tiny_shape();
  const auto l = analysis::decode_batch_line(shape, 20, 4, 2);
  const auto at8 = decode_cost(shape, 8, 20, 4, 2);
  EXPECT_DOUBLE_EQ(l.fixed_bytes + 8 * l.bytes_per_request, at8.bytes());
  EXPECT_DOUBLE_EQ(8 * l.flops_per_request, at8.flops);
  const double b = analysis::ridge_batch(l, 3.0);
  ASSERT_TRUE(std::isfinite(b));
  EXPECT_NEAR(b * l.flops_per_request / (l.fixed_bytes + b * l.bytes_per_request), 3.0, 1e-9);
}

TEST(DecodeRoofline, KneeIsTheLastBatchBeforeScalingFallsBelowThreshold) {
  // Steps: 2x, 2x, 1.25x over doublings: efficiencies 1, 1, 0.625 -> knee at batch 4.
  const auto knee = analysis::batch_knee({1, 2, 4, 8}, {100, 200, 400, 500});
  ASSERT_EQ(knee.step_efficiency.size(), 3u);
  EXPECT_DOUBLE_EQ(knee.step_efficiency[2], 0.625);
  ASSERT_TRUE(knee.knee_batch.has_value());
  EXPECT_EQ(*knee.knee_batch, 4);
  EXPECT_FALSE(analysis::batch_knee({1, 2, 4}, {100, 190, 370}).knee_batch.has_value());
  EXPECT_EQ(*analysis::batch_knee({2, 4}, {100, 100}).knee_batch, 2);
  EXPECT_THROW(analysis::batch_knee({2, 1}, {1, 2}), UsageError);
  EXPECT_THROW(analysis::batch_knee({1}, {1}), UsageError);
}

TEST(DecodeRoofline, TokenCountAveragesTheDecodeCallsByHand) {
  const auto shape = tiny_shape();
  // prompt 4, gen 3: two decode calls at contexts 5 and 6. The cache holds 2 (K and V) x 2
  // layers x 2 kv heads x 4 per head = 32 elements per position, 2 bytes each: 64 bytes.
  const auto c = analysis::decode_token_count(shape, 1, 4, 3, 4, 2);
  EXPECT_DOUBLE_EQ(c.mean_context, 5.5);
  EXPECT_DOUBLE_EQ(c.kv_bytes, 64 * 5.5 + 64);  // read the context, write the new position
  const auto at5 = decode_cost(shape, 1, 5, 4, 2), at6 = decode_cost(shape, 1, 6, 4, 2);
  EXPECT_DOUBLE_EQ(c.weight_bytes, at5.weight_bytes);  // the same weights at any context
  EXPECT_DOUBLE_EQ(c.flops, (at5.flops + at6.flops) / 2);
  EXPECT_DOUBLE_EQ(c.kv_fraction(), c.kv_bytes / (c.kv_bytes + c.weight_bytes));
  // Per token: a batch of 4 shares one read of the weights.
  const auto four = analysis::decode_token_count(shape, 4, 4, 3, 4, 2);
  EXPECT_DOUBLE_EQ(four.kv_bytes, c.kv_bytes);
  EXPECT_LT(four.weight_bytes, c.weight_bytes);
  EXPECT_THROW(analysis::decode_token_count(shape, 1, 4, 1, 4, 2), UsageError);
  EXPECT_DOUBLE_EQ(analysis::decode_weight_element_bytes(Dtype::kFp32), 4);
  EXPECT_DOUBLE_EQ(analysis::decode_weight_element_bytes(Dtype::kBf16), 2);
  EXPECT_THROW(analysis::decode_weight_element_bytes(Dtype::kInt8), UsageError);
  // The measured cache says its element size.
  EXPECT_DOUBLE_EQ(analysis::kv_element_bytes_of(shape, 1, 10, 640, 4), 2);
  EXPECT_DOUBLE_EQ(analysis::kv_element_bytes_of(shape, 1, 10, 0, 4), 4);
}

TEST(DecodeRoofline, SizesParseFromOneKeyOrSeveral) {
  const auto sizes = jobs::parse_decode_sizes("preset=small,medium,large", {"layers=2,d_model=32"});
  ASSERT_EQ(sizes.size(), 4u);
  EXPECT_EQ(sizes[1], std::vector<std::string>{"preset=medium"});
  EXPECT_EQ(sizes[3], (std::vector<std::string>{"layers=2", "d_model=32"}));
  EXPECT_THROW(jobs::parse_decode_sizes("preset", {}), UsageError);
  EXPECT_THROW(jobs::parse_decode_sizes("", {"layers=2,d_model"}), UsageError);
  const auto defaults = jobs::default_decode_sizes(workloads::default_registry().get("gpt2"));
  ASSERT_EQ(defaults.size(), 3u);
  EXPECT_EQ(defaults[2], std::vector<std::string>{"preset=large"});
}

// A stored gpt2 inference run at a tiny size whose TPOT lies exactly on a 10 GB/s roof.
store::StoredRun tiny_gpt2_run(int64_t id, int64_t layers, int64_t batch, double* bytes_out) {
  const Workload& w = workloads::default_registry().get("gpt2");
  Config c = w.default_config();
  c.apply_settings({"layers=" + std::to_string(layers), "d_model=32", "heads=4", "vocab=97",
                    "positions=64", "prompt=8", "gen=4", "batch=" + std::to_string(batch)});
  store::StoredRun r;
  r.id = id;
  r.workload = "gpt2";
  r.mode = "infer";
  r.batch = batch;
  r.threads = 1;
  r.config = c.to_json();
  const auto shape = w.transformer_shape(c);
  run::GenerationTimes g;
  g.batch = batch;
  g.prompt = 8;
  g.gen = 4;
  g.kv_cache_bytes = kv_cache_bytes(shape, batch, 12, 4);
  const double bytes = analysis::decode_token_count(shape, batch, 8, 4, 4, 4).bytes();
  g.tpot.mean = 1e-5 + bytes / 10e9;
  g.decode_tokens_per_s = static_cast<double>(batch) / g.tpot.mean;
  r.result.generation = g;
  if (bytes_out != nullptr) *bytes_out = bytes;
  return r;
}

TEST(DecodeRoofline, ReportChartDrawsBatchOneRunsAndTheFittedRoof) {
  std::vector<store::StoredRun> runs;
  double smallest = 0;
  runs.push_back(tiny_gpt2_run(1, 1, 1, &smallest));
  runs.push_back(tiny_gpt2_run(2, 2, 1, nullptr));
  runs.push_back(tiny_gpt2_run(3, 4, 1, nullptr));
  runs.push_back(tiny_gpt2_run(4, 4, 2, nullptr));  // batch 2: not on the batch-1 chart
  store::StoredRun one_shot = runs.front();
  one_shot.id = 5;
  one_shot.result.generation.reset();  // not a generation
  runs.push_back(one_shot);
  const auto chart = report::decode_roof_chart(runs);
  ASSERT_TRUE(chart.has_value());
  const auto& layers = chart->spec["layer"];
  ASSERT_EQ(layers.size(), 2u);
  const auto& roof = layers[0]["data"]["values"];
  const auto& dots = layers[1]["data"]["values"];
  ASSERT_EQ(dots.size(), 3u);
  EXPECT_DOUBLE_EQ(dots[0]["bytes_per_token"].get<double>(), smallest);
  ASSERT_EQ(roof.size(), 2u);
  // The roof is BW / bytes with the 10 GB/s the points were built on.
  for (const auto& p : roof)
    EXPECT_NEAR(p["tokens_per_s"].get<double>() * p["bytes_per_token"].get<double>(), 10e9, 1e3);
  EXPECT_NE(roof[0]["roof"].get<std::string>().find("roof 10 GB/s (R^2 1)"), std::string::npos)
      << roof[0]["roof"];
  runs.resize(2);  // two batch-1 runs: points but no roof
  const auto fewer = report::decode_roof_chart(runs);
  ASSERT_TRUE(fewer.has_value());
  EXPECT_TRUE(fewer->spec["layer"][0]["data"]["values"].empty());
  EXPECT_FALSE(report::decode_roof_chart({one_shot}).has_value());
}

class DecodeRooflineCli : public Cli {
 protected:
  // A stored probe of this machine at one thread, so that no test probes the machine.
  void store_probe() {
    auto probe = report_probe();
    probe.machine = platform::machine_key(platform::capture_environment(1));
    probe.document["plumb_probe_version"] = platform::kProbeDocumentVersion;
    probe.document["max_threads"] = 1;
    store::ResultsStore::open(db())->save_probe(probe);
  }
  // Tiny GPT-2s, one thread, short budgets.
  static std::string tiny(const std::string& sweep) {
    return "analyze decode gpt2 " + sweep +
           " --set vocab=97 --set positions=64 --set seq=16 --prompt 8 --gen 4 --threads 1 "
           "--max-time 0.3 --min-samples 3 --target-ci 0.5 --max-warmup-time 1";
  }
  static constexpr const char* kSizes =
      "--size layers=1,d_model=16,heads=2 --size layers=2,d_model=32,heads=4 "
      "--size layers=3,d_model=48,heads=4";
};

void expect_finite(const nlohmann::json& j, const char* key) {
  ASSERT_TRUE(j.contains(key)) << key << " in " << j.dump();
  ASSERT_TRUE(j[key].is_number()) << key << " in " << j.dump();
  EXPECT_TRUE(std::isfinite(j[key].get<double>())) << key;
}

TEST_F(DecodeRooflineCli, SizesAreStoredRunsFittedToTheRoofAndReusedWhenAsked) {
  store_probe();
  const auto j = plumb_json(tiny(kSizes));
  EXPECT_EQ(j["sweep"], "sizes");
  ASSERT_EQ(j["points"].size(), 3u);
  for (const auto& p : j["points"]) {
    EXPECT_EQ(p["status"], "ok");
    EXPECT_FALSE(p["reused"].get<bool>());
    for (const char* key : {"bytes_per_token", "tpot_s", "decode_tokens_per_s", "kv_fraction"})
      expect_finite(p, key);
  }
  EXPECT_LT(j["points"][0]["bytes_per_token"].get<double>(),
            j["points"][2]["bytes_per_token"].get<double>());
  ASSERT_TRUE(j["fit"].is_object()) << j.dump();
  for (const char* key : {"overhead_s", "r_squared"}) expect_finite(j["fit"], key);
  EXPECT_EQ(j["fit"]["n"], 3);
  EXPECT_TRUE(j["ceilings"]["probe_reused"].get<bool>());
  expect_finite(j["ceilings"], "dram_read_bytes_per_s");
  EXPECT_EQ(count_rows(db(), "SELECT COUNT(*) FROM runs WHERE tag = 'decode' AND mode = 'infer'"),
            3);
  // Again with --reuse: the stored runs, nothing new.
  const auto again = plumb_json(tiny(kSizes) + " --reuse");
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(again["points"][i]["reused"].get<bool>());
    EXPECT_EQ(again["points"][i]["run_id"], j["points"][i]["run_id"]);
  }
  EXPECT_EQ(count_rows(db(), "SELECT COUNT(*) FROM runs"), 3);
  const auto text = plumb(tiny(kSizes) + " --reuse --db " + db());
  EXPECT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("fit TPOT = a + bytes/BW over 3 sizes"), std::string::npos) << text.out;
}

TEST_F(DecodeRooflineCli, BatchAndContextSweeps) {
  store_probe();
  const auto b = plumb_json(tiny("--size layers=2,d_model=32,heads=4 --batches 1,2"));
  EXPECT_EQ(b["sweep"], "batches");
  ASSERT_EQ(b["points"].size(), 2u);
  EXPECT_LT(b["points"][0]["intensity"].get<double>(), b["points"][1]["intensity"].get<double>());
  ASSERT_TRUE(b["ridge"].is_object());
  EXPECT_TRUE(b["ridge"].contains("ridge_batch"));
  ASSERT_TRUE(b["ridge"]["knee"].is_object());
  EXPECT_EQ(b["ridge"]["knee"]["step_efficiency"].size(), 1u);
  expect_finite(b["ceilings"], "ridge_flops_per_byte");
  const auto c = plumb_json(tiny("--size layers=2,d_model=32,heads=4 --contexts 8,32"));
  EXPECT_EQ(c["sweep"], "contexts");
  ASSERT_EQ(c["points"].size(), 2u);
  EXPECT_EQ(c["points"][1]["prompt"], 32);
  // The cache's share of a token's bytes grows with the context.
  EXPECT_LT(c["points"][0]["kv_fraction"].get<double>(),
            c["points"][1]["kv_fraction"].get<double>());
}

TEST_F(DecodeRooflineCli, BadInputIsRefusedBeforeAnythingIsStored) {
  expect_usage_error(tiny("--size layers=1 --size layers=2") + " --db " + db(),
                     "at least three sizes");
  expect_usage_error(
      "analyze decode autoenc --size hidden=8 --size hidden=16 --size hidden=32 "
      "--threads 1 --db " +
          db(),
      "autoenc has no decode phase");
  // A size far beyond any machine's memory: the runner's refusal with the bytes.
  expect_usage_error(tiny("--size layers=1 --size layers=2 --size layers=48,d_model=32768,heads=32 "
                          "--set vocab=97") +
                         " --db " + db(),
                     "needs at least");
  expect_usage_error(tiny("--size layers=1 --batches 1,2 --contexts 8,16") + " --db " + db(),
                     "not both");
  EXPECT_FALSE(fs::exists(db()));
}

}  // namespace
}  // namespace plumb::testing
