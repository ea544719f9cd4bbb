// Generation with a KV cache, measured phase by phase: a fake generative model (a cache
// preallocated at prefill and written in place, known sizes) through core's generation loop,
// the runner's TTFT/TPOT statistics, the store's round trip and JSON, the refusal of a
// transformer run that cannot fit, and what a forward call computes and reads, counted by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "fake_generative.h"
#include "plumb/core/errors.h"
#include "plumb/core/generation.h"
#include "plumb/core/transformer_shape.h"
#include "plumb/run/generation_timing.h"
#include "plumb/run/model_footprint.h"
#include "plumb/run/runner.h"
#include "plumb/store/record_json.h"
#include "plumb/store/results_store.h"
#include "plumb/store/run_record.h"
#include "scratch_dir.h"

namespace plumb {
namespace {

using testing::FakeGenerativeModel;
using testing::kFakeLmWidth;

Workload fake_generative_workload(int64_t prompt, int64_t gen) {
  return testing::fake_generative_workload("fake_lm", /*batch=*/2, prompt, gen);
}

run::RunOptions infer_options(const Workload& w) {
  run::RunOptions o = testing::fake_run_options(w);
  o.mode = Mode::kInfer;
  o.min_samples = 4;
  o.max_iterations = 6;
  o.max_warmup_iterations = 3;
  return o;
}

TEST(Generation, PrefillThenGenMinusOneDecodesMakeGenTokensInOneCache) {
  FakeGenerativeModel model(/*batch=*/3, /*prompt=*/4, /*gen=*/5);
  torch::manual_seed(1);
  const Batch batch = model.make_batch();
  std::vector<Phase> calls;
  const GenerationTrace trace = generate(model, batch, torch::Device(torch::kCPU),
                                         [&](Phase phase) { calls.push_back(phase); });
  EXPECT_EQ(trace.tokens.sizes(), (std::vector<int64_t>{3, 5}));
  ASSERT_EQ(trace.decode_s.size(), 4u);
  EXPECT_EQ(calls.front(), Phase::kPrefill);
  EXPECT_EQ(std::count(calls.begin(), calls.end(), Phase::kDecode), 4);
  EXPECT_GT(trace.prefill_s, 0);
  for (double s : trace.decode_s) EXPECT_GT(s, 0);
  EXPECT_DOUBLE_EQ(trace.total_s(),
                   std::accumulate(trace.decode_s.begin(), trace.decode_s.end(), trace.prefill_s));
  // The cache held every position: the tokens fed back sit at positions P .. P+G-2.
  EXPECT_EQ(model.kv_cache_bytes(), 3 * (4 + 5) * kFakeLmWidth * 4);
  EXPECT_TRUE(model.cache()
                  .narrow(1, 4, 4)
                  .select(2, 0)
                  .to(torch::kLong)
                  .equal(trace.tokens.narrow(1, 0, 4)));
}

// Teacher forcing: decode iteration i is fed forced[:, i - 1] (the cache's positions show what
// was fed), while the trace's tokens stay the model's own choices.
TEST(Generation, ForcedTokensAreFedInsteadOfTheModelsOwnChoices) {
  FakeGenerativeModel model(/*batch=*/2, /*prompt=*/3, /*gen=*/4);
  torch::manual_seed(1);
  const Batch batch = model.make_batch();
  const auto own = generate(model, batch, torch::Device(torch::kCPU));
  const auto forced = own.tokens + 7;  // [2, 4], none equal to a choice of the model
  const auto trace = generate(model, batch, torch::Device(torch::kCPU), {}, forced);
  EXPECT_TRUE(
      model.cache().narrow(1, 3, 3).select(2, 0).to(torch::kLong).equal(forced.narrow(1, 0, 3)));
  EXPECT_EQ(trace.tokens.sizes(), (std::vector<int64_t>{2, 4}));
  EXPECT_FALSE(trace.tokens.narrow(1, 0, 3).equal(forced.narrow(1, 0, 3)));
  // Fed its own tokens, a model generates what it generates alone.
  EXPECT_TRUE(
      generate(model, batch, torch::Device(torch::kCPU), {}, own.tokens).tokens.equal(own.tokens));
}

TEST(Generation, PhaseNamesAndScopesRoundTrip) {
  for (Phase phase : all_phases()) {
    EXPECT_EQ(phase_from_name(phase_name(phase)), phase);
    EXPECT_EQ(phase_of_scope(phase_scope(phase)), phase);
  }
  EXPECT_FALSE(phase_from_name("both"));
  EXPECT_FALSE(phase_of_scope("plumb::data"));
  EXPECT_FALSE(phase_of_scope(nullptr));
}

TEST(Generation, TpotIsTheMeanDecodeCallOfEachStep) {
  // gen 3: two decode calls per step.
  EXPECT_EQ(run::per_step_tpot({1, 3, 2, 4, 10, 20}, 3), (std::vector<double>{2, 3, 15}));
  EXPECT_TRUE(run::per_step_tpot({}, 1).empty());
  run::GenerationTimes g;
  g.batch = 2;
  g.prompt = 10;
  g.gen = 3;
  g.ttft_s = {0.5, 0.5};
  g.decode_s = {0.1, 0.3, 0.1, 0.3};
  run::summarize_generation(g);
  EXPECT_DOUBLE_EQ(g.ttft.mean, 0.5);
  EXPECT_DOUBLE_EQ(g.tpot.mean, 0.2);
  EXPECT_EQ(g.inter_token.n, 4u);
  EXPECT_DOUBLE_EQ(g.prefill_tokens_per_s, 2 * 10 / 0.5);  // prompt tokens of the batch / TTFT
  EXPECT_DOUBLE_EQ(g.decode_tokens_per_s, 2 / 0.2);        // one token per request per call
}

class GenerationRunTest : public testing::ScratchDirTest {};

TEST_F(GenerationRunTest, EveryStepIsItsTtftPlusItsDecodesAndTheStoreKeepsThem) {
  const Workload w = fake_generative_workload(/*prompt=*/6, /*gen=*/4);
  const run::RunOptions o = infer_options(w);
  const run::RunResult r = run::run_workload(w, o);
  ASSERT_EQ(r.status, run::RunStatus::kOk) << r.message;
  ASSERT_TRUE(r.generation);
  const run::GenerationTimes& g = *r.generation;
  EXPECT_EQ(g.batch, 2);
  EXPECT_EQ(g.prompt, 6);
  EXPECT_EQ(g.gen, 4);
  EXPECT_EQ(g.kv_cache_bytes, 2 * (6 + 4) * kFakeLmWidth * 4);
  ASSERT_EQ(g.ttft_s.size(), r.samples_s.size());
  ASSERT_EQ(g.decode_s.size(), 3 * r.samples_s.size());
  for (size_t i = 0; i < r.samples_s.size(); ++i)
    EXPECT_DOUBLE_EQ(r.samples_s[i], std::accumulate(g.decode_s.begin() + 3 * i,
                                                     g.decode_s.begin() + 3 * i + 3, g.ttft_s[i]));
  EXPECT_GT(g.ttft.mean, 0);
  EXPECT_GT(g.tpot.mean, 0);
  EXPECT_DOUBLE_EQ(g.decode_tokens_per_s, 2 / g.tpot.mean);
  EXPECT_DOUBLE_EQ(r.units_per_step, 2 * 4);  // output tokens of the batch

  const std::string db = (dir_ / "plumb.db").string();
  const int64_t id =
      store::ResultsStore::open(db)->save_run(o, r, platform::Environment{}, "generation");
  const auto stored = store::ResultsStore::open(db, /*read_only=*/true)->load_run(id, false);
  ASSERT_TRUE(stored && stored->result.generation);
  const run::GenerationTimes& back = *stored->result.generation;
  EXPECT_EQ(back.ttft_s, g.ttft_s);
  EXPECT_EQ(back.decode_s, g.decode_s);
  EXPECT_EQ(back.kv_cache_bytes, g.kv_cache_bytes);
  EXPECT_DOUBLE_EQ(back.tpot.mean, g.tpot.mean);
  const auto json = store::run_json(*stored, /*with_samples=*/true);
  ASSERT_TRUE(json.contains("generation"));
  EXPECT_EQ(json["generation"]["gen"], 4);
  EXPECT_DOUBLE_EQ(json["generation"]["tpot_s"]["mean"].get<double>(), g.tpot.mean);
  EXPECT_EQ(json["generation"]["decode_samples"].size(), g.decode_s.size());
}

TEST(Generation, OneOutputTokenHasATtftAndNoTpot) {
  const Workload w = fake_generative_workload(/*prompt=*/3, /*gen=*/1);
  const run::RunResult r = run::run_workload(w, infer_options(w));
  ASSERT_EQ(r.status, run::RunStatus::kOk) << r.message;
  ASSERT_TRUE(r.generation);
  EXPECT_TRUE(r.generation->decode_s.empty());
  EXPECT_GT(r.generation->ttft.mean, 0);
  EXPECT_TRUE(std::isnan(r.generation->tpot.mean));
  EXPECT_TRUE(std::isnan(r.generation->decode_tokens_per_s));
}

TEST(Generation, TrainingAGenerativeModelHasNoPhases) {
  const Workload w = fake_generative_workload(3, 2);
  run::RunOptions o = infer_options(w);
  o.mode = Mode::kTrain;
  const run::RunResult r = run::run_workload(w, o);
  ASSERT_EQ(r.status, run::RunStatus::kOk) << r.message;
  EXPECT_FALSE(r.generation);
}

// A small decoder: 2 layers, d 8, 2 query heads and 1 key/value head of 4, SwiGLU ffn 16,
// RMSNorm, rotary positions, vocabulary 10, untied output projection.
TransformerShape tiny_decoder() {
  TransformerShape s;
  s.layers = 2;
  s.d_model = 8;
  s.heads = 2;
  s.kv_heads = 1;
  s.head_dim = 4;
  s.ffn = 16;
  s.vocab = 10;
  s.max_positions = 32;
  s.gated_mlp = true;
  s.linear_bias = false;
  s.layer_norm = false;
  s.learned_positions = false;
  s.tied_embedding = false;
  return s;
}

TEST(TransformerShape, ParametersAndADecodeTokenCountedByHand) {
  const TransformerShape s = tiny_decoder();
  // Per layer: W_q 8x8, W_k and W_v 8x4 each, W_o 8x8, gate/up/down 3 x 8x16, two RMSNorms of 8.
  const int64_t per_layer = 64 + 32 + 32 + 64 + 3 * 128 + 2 * 8;
  EXPECT_EQ(parameter_count(s), 2 * per_layer + 8 + 2 * 10 * 8);  // + final norm + in/out tables
  EXPECT_EQ(layer_matrix_parameters(s), 2 * (per_layer - 16));

  // One decode token at context 5, batch 1, 4-byte weights, 2-byte cache.
  const ForwardCost c = decode_cost(s, /*batch=*/1, /*context=*/5, 4, 2);
  const double matrices = 2 * (per_layer - 16);
  EXPECT_DOUBLE_EQ(c.flops, 2 * matrices + 4.0 * 2 * (2 * 4) * 5 + 2.0 * 8 * 10);
  // Every layer parameter, the final norm, the output matrix and one embedding row.
  EXPECT_DOUBLE_EQ(c.weight_bytes, 4.0 * (2 * per_layer + 8 + 10 * 8 + 8));
  // Keys and values of 5 positions (the new one included), 2 layers, one head of 4.
  EXPECT_DOUBLE_EQ(c.kv_read_bytes, 2.0 * 2 * 4 * 5 * 2);
  EXPECT_DOUBLE_EQ(c.kv_write_bytes, 2.0 * 2 * 4 * 1 * 2);
  EXPECT_DOUBLE_EQ(kv_cache_bytes(s, 3, 7, 4), 2.0 * 2 * 4 * 7 * 3 * 4);

  // A prefill of 6 tokens for 2 requests reads the weights once and projects the last
  // position of each request only.
  const ForwardCost p = prefill_cost(s, 2, 6, 4, 4);
  EXPECT_DOUBLE_EQ(p.flops, 2 * 12 * matrices + 4.0 * 12 * (2 * 4) * 2 * 6 + 2 * 2.0 * 8 * 10);
  EXPECT_DOUBLE_EQ(p.weight_bytes, 4.0 * (2 * per_layer + 8 + 10 * 8 + 12 * 8));
}

TEST(ModelFootprint, ATransformerThatCannotFitIsRefusedWithItsBytesBeforeItIsBuilt) {
  Workload w = fake_generative_workload(4, 4);
  w.transformer_shape = [](const Config&) { return tiny_decoder(); };
  w.build = [](const Config&, const torch::Device&) -> std::unique_ptr<Model> {
    throw std::logic_error("built a model that was to be refused");
  };
  run::RunOptions o = infer_options(w);
  const auto footprint = run::transformer_footprint(w, o);
  ASSERT_TRUE(footprint);
  EXPECT_DOUBLE_EQ(footprint->weights, 4.0 * static_cast<double>(parameter_count(tiny_decoder())));
  EXPECT_DOUBLE_EQ(footprint->kv_cache, 0);  // no prompt/gen keys in this config
  try {
    run::refuse_if_it_cannot_fit(w, o, /*available_bytes=*/1000);
    FAIL() << "a run needing more than 1000 bytes was not refused";
  } catch (const UsageError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("fake_lm needs at least"), std::string::npos) << what;
    EXPECT_NE(what.find("0.0 GB of memory is available"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << "one line";
  }
  EXPECT_NO_THROW(run::refuse_if_it_cannot_fit(w, o, int64_t{1} << 40));
  o.mode = Mode::kTrain;  // gradients and AdamW's moments: 12 more bytes per parameter
  EXPECT_DOUBLE_EQ(run::transformer_footprint(w, o)->training_state,
                   12.0 * static_cast<double>(parameter_count(tiny_decoder())));
}

}  // namespace
}  // namespace plumb
