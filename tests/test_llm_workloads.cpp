// The llm suite's workloads (gpt2, llama, bert) and paradnn_transformer: parameter counts of
// every preset from the published configurations, the cost model's shape against the built
// module, KV-cache decoding against recomputing the whole sequence, the cache's allocation,
// and the usage errors of sizes a model cannot take.
#include <gtest/gtest.h>

#include <c10/core/InferenceMode.h>

#include "plumb/core/errors.h"
#include "plumb/core/generation.h"
#include "plumb/run/thread_count.h"
#include "plumb/workloads/all_workloads.h"
#include "plumb/workloads/common/parallel_normal.h"
#include "plumb/workloads/llm/decoder_lm.h"
#include "workload_test_util.h"

namespace plumb {
namespace {

const Workload& llm_workload(const std::string& name) {
  return workloads::default_registry().get(name);
}

Config preset_config(const std::string& name, const std::string& preset) {
  Config c = llm_workload(name).default_config();
  c.apply_settings({"preset=" + preset});
  return c;
}

int64_t shape_count(const std::string& name, const Config& c) {
  return parameter_count(llm_workload(name).transformer_shape(c));
}

// GPT-2 from hparams.json (n_vocab 50257, n_ctx 1024): per block two LayerNorms (4d), c_attn
// (d x 3d + 3d), attention c_proj (d x d + d), c_fc (d x 4d + 4d), mlp c_proj (4d x d + d);
// then wte (V d), wpe (1024 d), ln_f (2d); the output projection is wte.
int64_t gpt2_formula(int64_t L, int64_t d) {
  const int64_t V = 50257, ctx = 1024;
  const int64_t block =
      4 * d + (3 * d * d + 3 * d) + (d * d + d) + (4 * d * d + 4 * d) + (4 * d * d + d);
  return L * block + V * d + ctx * d + 2 * d;
}

TEST(LlmPresets, Gpt2CountsFollowTheReleasedConfigs) {
  const struct {
    const char* preset;
    int64_t layers, d, published;
  } presets[] = {{"small", 12, 768, 124439808},
                 {"medium", 24, 1024, 354823168},
                 {"large", 36, 1280, 774030080},
                 {"xl", 48, 1600, 1557611200}};
  for (const auto& p : presets) {
    EXPECT_EQ(gpt2_formula(p.layers, p.d), p.published) << p.preset;
    EXPECT_EQ(shape_count("gpt2", preset_config("gpt2", p.preset)), p.published) << p.preset;
  }
}

// Llama from config.json: per block attention d (H hd) + 2 d (KV hd) + (H hd) d, SwiGLU 3 d F,
// two RMSNorm weights (2d); the token table V d, an output projection V d unless tied, the
// final norm d.
int64_t llama_formula(int64_t L, int64_t d, int64_t H, int64_t KV, int64_t F, int64_t V,
                      bool tied) {
  const int64_t hd = d / H;
  const int64_t block = d * H * hd + 2 * d * KV * hd + H * hd * d + 3 * d * F + 2 * d;
  return L * block + V * d * (tied ? 1 : 2) + d;
}

TEST(LlmPresets, LlamaCountsFollowTheReleasedConfigs) {
  EXPECT_EQ(llama_formula(22, 2048, 32, 4, 5632, 32000, false), 1100048384);
  EXPECT_EQ(llama_formula(16, 2048, 32, 8, 8192, 128256, true), 1235814400);
  EXPECT_EQ(llama_formula(32, 4096, 32, 32, 11008, 32000, false), 6738415616);
  EXPECT_EQ(llama_formula(32, 4096, 32, 8, 14336, 128256, false), 8030261248);
  EXPECT_EQ(shape_count("llama", preset_config("llama", "tinyllama-1.1b")), 1100048384);
  EXPECT_EQ(shape_count("llama", preset_config("llama", "llama-3.2-1b")), 1235814400);
  EXPECT_EQ(shape_count("llama", preset_config("llama", "llama-2-7b")), 6738415616);
  EXPECT_EQ(shape_count("llama", preset_config("llama", "llama-3-8b")), 8030261248);
}

// BERT from google-research/bert's bert_config.json (vocab 30522, 512 positions, 2 token types,
// intermediate 4d): embeddings (V + 512 + 2) d + LayerNorm 2d; per layer q, k, v, o with biases
// 4 (d^2 + d), intermediate d 4d + 4d, output 4d d + d, two LayerNorms 4d. No pooler. Heads: the
// masked-LM transform (d^2 + d, LayerNorm 2d, decoder bias V; its matrix is the word table) and
// the SQuAD span head (2d + 2).
int64_t bert_encoder_formula(int64_t L, int64_t d) {
  const int64_t V = 30522;
  return (V + 512 + 2) * d + 2 * d +
         L * (4 * (d * d + d) + (4 * d * d + 4 * d) + (4 * d * d + d) + 4 * d);
}

TEST(LlmPresets, BertCountsFollowTheReleasedConfigs) {
  // Hugging Face BertModel with its pooler (d^2 + d): 109,482,240 and 335,141,888.
  EXPECT_EQ(bert_encoder_formula(12, 768) + 768 * 768 + 768, 109482240);
  EXPECT_EQ(bert_encoder_formula(24, 1024) + 1024 * 1024 + 1024, 335141888);
  const auto heads = [](int64_t d) { return (d * d + d + 2 * d + 30522) + (2 * d + 2); };
  EXPECT_EQ(bert_encoder_formula(12, 768) + heads(768), 109515836);
  EXPECT_EQ(bert_encoder_formula(24, 1024) + heads(1024), 335176508);
  EXPECT_EQ(shape_count("bert", preset_config("bert", "base")), 109515836);
  EXPECT_EQ(shape_count("bert", preset_config("bert", "large")), 335176508);
  EXPECT_FALSE(llm_workload("bert").transformer_shape(preset_config("bert", "base")).causal);
}

int64_t built_count(const std::string& name, const Config& c) {
  torch::manual_seed(0);
  auto model = llm_workload(name).build(c, torch::Device(torch::kCPU));
  return count_trainable_parameters(model->module());
}

// The shape the cost model counts from describes the module exactly: at every workload's tiny
// size, at each preset's structure shrunk (GQA, tied and untied), and at GPT-2 small built whole.
TEST(LlmShape, ParameterCountOfTheShapeEqualsTheBuiltModule) {
  for (const std::string name : {"gpt2", "llama", "bert", "paradnn_transformer"}) {
    const Config tiny = testing::tiny_config(llm_workload(name));
    EXPECT_EQ(shape_count(name, tiny), built_count(name, tiny)) << name;
  }
  // Each preset's structure (its query/key-value head ratio, tying) at a tiny width.
  const std::pair<const char*, const char*> shrunk[] = {{"tinyllama-1.1b", "kv_heads=1"},
                                                        {"llama-3.2-1b", "kv_heads=2"},
                                                        {"llama-2-7b", "kv_heads=8"},
                                                        {"llama-3-8b", "kv_heads=2"}};
  for (const auto& [preset, kv_heads] : shrunk) {
    Config c = testing::tiny_config(llm_workload("llama"));
    c.apply_settings({std::string("preset=") + preset, kv_heads, "heads=8", "d_model=64"});
    EXPECT_EQ(shape_count("llama", c), built_count("llama", c)) << preset;
  }
  EXPECT_EQ(built_count("gpt2", preset_config("gpt2", "small")), 124439808);
  EXPECT_EQ(built_count("bert", preset_config("bert", "base")), 109515836);
  // paradnn_transformer's default, by its header's closed form.
  EXPECT_EQ(
      shape_count("paradnn_transformer", llm_workload("paradnn_transformer").default_config()),
      8 * (4 * 512 * 512 + 3 * 512 * 1536 + 2 * 512) + 2 * 32000 * 512 + 512);
}

// A tiny model in inference, as the runner runs it.
struct TinyGenerator {
  std::unique_ptr<Model> model;
  GenerativeModel* gen = nullptr;
  workloads::DecoderLmImpl* net = nullptr;
};

TinyGenerator tiny_generator(const std::string& name, const std::vector<std::string>& settings) {
  Config c = testing::tiny_config(llm_workload(name));
  c.apply_settings(settings);
  torch::manual_seed(3);
  TinyGenerator t;
  t.model = llm_workload(name).build(c, torch::Device(torch::kCPU));
  t.model->module().eval();
  t.gen = as_generative(*t.model);
  t.net = dynamic_cast<workloads::DecoderLmImpl*>(&t.model->module());
  return t;
}

// Each decode iteration's logits equal those of the whole sequence (prompt + tokens chosen so
// far) recomputed without a cache, at its last position. fp32; tolerance 1e-4 of the logits'
// largest magnitude (the two paths sum the same products in different orders).
void expect_cache_matches_recompute(const std::string& name,
                                    const std::vector<std::string>& settings) {
  TinyGenerator t = tiny_generator(name, settings);
  ASSERT_NE(t.gen, nullptr);
  ASSERT_NE(t.net, nullptr);
  c10::InferenceMode guard;
  const Batch batch = t.model->make_batch();
  const auto& prompt = batch.tensors[0];  // [B, P]
  const GenerationShape shape = t.gen->generation_shape();
  std::vector<torch::Tensor> chosen = {t.gen->prefill(batch)};
  std::vector<torch::Tensor> logits = {t.gen->last_logits()};
  for (int64_t i = 1; i < shape.gen; ++i) {
    chosen.push_back(t.gen->decode(chosen.back()));
    logits.push_back(t.gen->last_logits());
  }
  for (size_t i = 0; i < logits.size(); ++i) {
    std::vector<torch::Tensor> parts = {prompt};
    for (size_t j = 0; j < i; ++j) parts.push_back(chosen[j].unsqueeze(1));
    const auto sequence = torch::cat(parts, 1);  // [B, P + i]
    const auto full = t.net->sequence_logits(sequence).select(1, sequence.size(1) - 1);  // [B, V]
    const double scale = full.abs().max().item<double>();
    EXPECT_LT((full - logits[i]).abs().max().item<double>(), 1e-4 * scale)
        << name << " token " << i;
    EXPECT_TRUE(chosen[i].equal(full.argmax(-1))) << name << " token " << i;
  }
}

TEST(LlmGeneration, KvCacheDecodingEqualsRecomputingTheSequence) {
  expect_cache_matches_recompute("gpt2", {});
  expect_cache_matches_recompute("llama", {});                          // GQA: 4 heads, 2 kv
  expect_cache_matches_recompute("llama", {"kv_heads=1", "tied=yes"});  // multi-query
  expect_cache_matches_recompute("llama", {"kv_heads=4", "prompt=1", "gen=7"});  // MHA, 1 token
  // Batch 1: each decode token is one row, run as a matrix-vector product.
  expect_cache_matches_recompute("gpt2", {"batch=1"});
  expect_cache_matches_recompute("llama", {"batch=1", "tied=yes"});
}

TEST(LlmGeneration, GenerationMakesGenTokensInOneCacheAllocatedAtPrefill) {
  for (const std::string name : {"gpt2", "llama"}) {
    TinyGenerator t = tiny_generator(name, {"prompt=5", "gen=6", "batch=3"});
    c10::InferenceMode guard;
    const Batch batch = t.model->make_batch();
    EXPECT_EQ(batch.tensors[0].sizes(), (std::vector<int64_t>{3, 5}));
    EXPECT_EQ(batch.units, 3 * 6);
    const auto trace = generate(*t.gen, batch, torch::Device(torch::kCPU));
    EXPECT_EQ(trace.tokens.sizes(), (std::vector<int64_t>{3, 6})) << name;
    EXPECT_EQ(trace.tokens.scalar_type(), torch::kLong);
    EXPECT_EQ(trace.decode_s.size(), 5u);
    // Layers x (keys + values) x [B, kv_heads, prompt + gen, head_dim] fp32.
    const auto shape =
        llm_workload(name).transformer_shape(testing::tiny_config(llm_workload(name)));
    const int64_t expected = shape.layers * 2 * 3 * shape.kv_heads * (5 + 6) * shape.head_dim * 4;
    EXPECT_EQ(t.gen->kv_cache_bytes(), expected) << name;
    EXPECT_EQ(static_cast<double>(expected), kv_cache_bytes(shape, 3, 11, 4.0));
    // Decoding writes into the cache the prefill allocated: its storage never moves, and the
    // next generation of the same size reuses it.
    workloads::KvCache cache;
    cache.layers.resize(static_cast<size_t>(shape.layers));
    cache.capacity = 5 + 6;
    t.net->hidden(batch.tensors[0], 0, &cache);
    std::vector<const void*> storage;
    for (const auto& layer : cache.layers) storage.push_back(layer.k.data_ptr());
    for (int64_t position = 5; position < 11; ++position) {
      t.net->hidden(trace.tokens.select(1, 0).unsqueeze(1), position, &cache);
      for (size_t l = 0; l < cache.layers.size(); ++l)
        EXPECT_EQ(cache.layers[l].k.data_ptr(), storage[l]) << name << " position " << position;
    }
    t.net->hidden(batch.tensors[0], 0, &cache);
    EXPECT_EQ(cache.layers[0].k.data_ptr(), storage[0]);
    EXPECT_EQ(cache.bytes(), expected);
    // infer_output is the generated tokens.
    EXPECT_EQ(t.model->infer_output(batch).sizes(), (std::vector<int64_t>{3, 6}));
  }
}

TEST(LlmGeneration, DecodersAreGenerativeAndBertIsNot) {
  for (const std::string name : {"gpt2", "llama", "paradnn_transformer", "bert"}) {
    auto model = llm_workload(name).build(testing::tiny_config(llm_workload(name)),
                                          torch::Device(torch::kCPU));
    EXPECT_EQ(as_generative(*model) != nullptr, name != "bert") << name;
  }
}

std::string usage_error(const std::string& name, const std::vector<std::string>& settings) {
  try {
    Config c = llm_workload(name).default_config();
    c.apply_settings(settings);
    llm_workload(name).build(c, torch::Device(torch::kCPU));
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(LlmUsage, SizesBeyondTheContextAreRefusedWithTheNumbers) {
  EXPECT_EQ(usage_error("llama", {"prompt=2000", "gen=100"}),
            "llama: prompt 2000 + gen 100 = 2100 positions exceed the context 2048 of preset "
            "tinyllama-1.1b; lower prompt or gen");
  EXPECT_EQ(usage_error("gpt2", {"prompt=1000", "gen=64", "preset=xl"}),
            "gpt2: prompt 1000 + gen 64 = 1064 positions exceed the context 1024 of preset xl; "
            "lower prompt or gen");
  EXPECT_EQ(usage_error("gpt2", {"seq=2048"}),
            "gpt2: seq 2048 exceeds the context 1024 of preset small; lower seq");
  // seq 0 (the default) follows a smaller context instead of refusing it: an inference run
  // at positions=64 names no training length.
  EXPECT_EQ(usage_error("gpt2", {"layers=1", "d_model=32", "heads=4", "vocab=97", "positions=64",
                                 "prompt=16", "gen=8"}),
            "");
  Config c = llm_workload("gpt2").default_config();
  try {
    c.apply_settings({"gen=0"});
    ADD_FAILURE() << "gen=0 accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("gen"), std::string::npos) << e.what();
  }
  EXPECT_NE(
      usage_error("llama", {"heads=32", "kv_heads=5", "layers=1", "d_model=64", "ffn=8", "vocab=8"})
          .find("not a multiple of kv_heads 5"),
      std::string::npos);
}

// Weights drawn on every thread depend on the seed alone: one thread and two draw the same
// values, with the spread asked for, and another seed draws others. The size spans several
// chunks and ends in a partial one.
TEST(LlmWorkloads, ParallelNormalWeightsDependOnTheSeedNotTheThreadCount) {
  const auto draw = [](uint64_t seed, int threads) {
    run::ScopedThreadCount scoped(threads);
    torch::manual_seed(seed);
    auto t = torch::empty({3 * (int64_t{1} << 20) + 17});  // [n]
    workloads::fill_normal_parallel(t, 0.02);
    return t;
  };
  const auto one = draw(5, 1);
  EXPECT_TRUE(torch::equal(one, draw(5, 2)));
  EXPECT_FALSE(torch::equal(one, draw(6, 2)));
  // 3 Mi draws: the mean's standard error is 1.1e-5 and the spread's 8e-6.
  EXPECT_NEAR(one.mean().item<double>(), 0.0, 1e-4);
  EXPECT_NEAR(one.std().item<double>(), 0.02, 2e-4);
  // Chunks draw from unrelated streams, not one stream repeated.
  const int64_t chunk = int64_t{1} << 20;
  EXPECT_FALSE(torch::equal(one.narrow(0, 0, chunk), one.narrow(0, chunk, chunk)));
}

// normal_linear is built 1 x 1 and then given its weight: the module must still be the layer
// it names (options, registered parameters that are the members, N(0, std), zero bias) and
// train like one.
TEST(LlmWorkloads, NormalLinearIsTheLayerItNames) {
  torch::manual_seed(1);
  auto linear = workloads::normal_linear(300, 200, true, 0.5);
  EXPECT_EQ(linear->options.in_features(), 300);
  EXPECT_EQ(linear->options.out_features(), 200);
  ASSERT_EQ(linear->weight.sizes(), (std::vector<int64_t>{200, 300}));
  ASSERT_EQ(linear->bias.sizes(), (std::vector<int64_t>{200}));
  const auto named = linear->named_parameters();
  ASSERT_EQ(named.size(), 2u);
  EXPECT_EQ(named["weight"].data_ptr(), linear->weight.data_ptr());
  EXPECT_EQ(named["bias"].data_ptr(), linear->bias.data_ptr());
  EXPECT_TRUE(linear->weight.requires_grad());
  EXPECT_NEAR(linear->weight.std().item<double>(), 0.5, 0.01);
  EXPECT_EQ(linear->bias.abs().sum().item<double>(), 0.0);
  const auto x = torch::randn({4, 300});  // [B, I]
  linear(x).sum().backward();
  ASSERT_TRUE(linear->weight.grad().defined());
  EXPECT_EQ(linear->weight.grad().sizes(), linear->weight.sizes());
  EXPECT_TRUE(torch::allclose(linear->bias.grad(), torch::full({200}, 4.0)));
}

}  // namespace
}  // namespace plumb
