// The decoder-only transformer behind gpt2, llama and paradnn_transformer: pre-norm blocks
// (LayerNorm or RMSNorm), learned or rotary positions, GELU or SwiGLU feed-forward,
// grouped-query attention, optional projection biases and tied output embedding; trained with a
// causal language-model loss and AdamW, and run generatively with a KV cache preallocated at
// prefill for the whole generation (prompt + gen positions) and written in place per token.
//
// Module paths (the profiler attributes operators by them, as named_modules() lists them):
//   embed_tokens, embed_positions (learned positions only),
//   layers.N.attn_norm, layers.N.attn.{q,k,v,o}_proj, layers.N.attn (scores, softmax, weighted
//   sum, rotary, cache write, residual add), layers.N.mlp_norm,
//   layers.N.mlp.{gate,up,down}_proj (gate only with SwiGLU), layers.N.mlp (activation,
//   residual add), norm, lm_head (a module only when untied), loss, optimizer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "plumb/core/config.h"
#include "plumb/core/generation.h"
#include "plumb/core/transformer_shape.h"
#include "plumb/core/workload.h"

namespace plumb::workloads {

// The architecture of one decoder-only model.
struct DecoderSpec {
  int64_t layers = 0;
  int64_t d_model = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;  // < heads: grouped-query attention
  int64_t ffn = 0;
  int64_t vocab = 0;
  int64_t context = 0;    // longest sequence the model takes (rows of a learned position table)
  bool rms_norm = false;  // RMSNorm (weight only) rather than LayerNorm (weight and bias)
  double norm_eps = 1e-5;
  bool rotary = false;  // rotary positions on queries and keys; false: a learned table
  double rope_theta = 10000;
  bool swiglu = false;     // down(silu(gate(x)) * up(x)); false: down(gelu_tanh(up(x)))
  bool bias = false;       // biases on every projection
  bool tied = false;       // the output projection is the token embedding
  double dropout = 0;      // on embeddings, attention weights and sublayer outputs (training)
  double init_std = 0.02;  // N(0, init_std) for projections and the token table
  double position_init_std = 0.02;   // the learned position table
  bool scale_residual_init = false;  // o_proj, down_proj: N(0, init_std / sqrt(2 layers))

  int64_t head_dim() const { return d_model / heads; }
};

// Llama's block choices (RMSNorm eps 1e-5, rotary positions at theta 10,000, SwiGLU, no biases,
// untied, N(0, 0.02)) with no dimensions yet: llama and paradnn_transformer start from it.
DecoderSpec llama_style_spec();

// The spec's dimensions for the cost model (transformer_shape.h).
TransformerShape decoder_shape(const DecoderSpec& spec);

// Throws UsageError (naming `workload`) for dimensions the blocks cannot take: d_model not a
// multiple of heads, heads not a multiple of kv_heads, an odd head size with rotary positions.
void check_decoder_dims(const std::string& workload, const DecoderSpec& spec);

// AdamW as the sources train: weight decay on matrices and embeddings (parameters of two or
// more dimensions) only, never on biases and norm weights; gradients clipped to a global norm.
struct AdamWSettings {
  double lr = 3e-4;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.1;
  double clip_norm = 1.0;  // 0: no clipping
};
std::unique_ptr<torch::optim::AdamW> make_lm_adamw(const std::vector<torch::Tensor>& parameters,
                                                   const AdamWSettings& settings);
// Declares beta1, beta2, eps, weight_decay and clip_norm with `defaults` (the learning rate is
// each workload's own key, `lr`, as it depends on the preset); `source` says where they are from.
void add_adamw_keys(Config& config, const AdamWSettings& defaults, const std::string& source);
// The settings the config holds, at learning rate `lr`.
AdamWSettings adamw_settings(const Config& config, double lr);

// A preset's dimension unless the config overrides it: architecture keys of the presets'
// workloads default to 0, "the preset's value".
int64_t preset_or(const Config& config, const std::string& key, int64_t preset_value);
double preset_or(const Config& config, const std::string& key, double preset_value);

// The backward of `loss`, then the AdamW step (gradients clipped first) under "optimizer"; the
// caller zeroes the gradients before its forward.
void lm_update(torch::optim::AdamW& optimizer, const std::vector<torch::Tensor>& parameters,
               const AdamWSettings& settings, const torch::Tensor& loss);

// The sizes of a language model's steps.
struct LmSizes {
  int64_t batch = 1;
  int64_t prompt = 1;  // inference: prompt tokens per request
  int64_t gen = 1;     // inference: output tokens per request, the first from the prefill
  int64_t seq = 1;     // training: tokens per sequence
};

// Declares batch, prompt, gen and seq (in that order) with the workload's defaults; seq's
// default 0 stands for the model's context up to `seq_cap` (resolved by lm_sizes), so a
// smaller context set for inference needs no seq of its own.
void add_lm_size_keys(Config& config, int64_t batch, const std::string& batch_doc, int64_t seq_cap,
                      const std::string& seq_doc);
// The sizes `config` asks for, seq 0 resolved to min(context, seq_cap).
LmSizes lm_sizes(const Config& config, int64_t context, int64_t seq_cap);
// Throws UsageError when prompt + gen or seq exceed `context`; `context_text` names it
// ("the context 2048 of preset tinyllama-1.1b").
void check_lm_context(const std::string& workload, const LmSizes& sizes, int64_t context,
                      const std::string& context_text);

// Attention of queries [B, H, T, hd] over keys and values [B, KV, S, hd] (H a multiple of KV:
// query head h reads key/value head h / (H / KV), as repeating each key/value head H / KV
// times, without copying them). With `causal`, query i sits at position start + i and sees
// keys 0 .. start + i. `masked`, when defined ([B, 1, 1, S] bool, a ragged decode's), hides
// the keys where it is true from every query of that row. Returns [B, T, H hd].
torch::Tensor grouped_attention(const torch::Tensor& q, const torch::Tensor& k,
                                const torch::Tensor& v, int64_t start, bool causal, double dropout,
                                bool training, const torch::Tensor& masked = {});

// A linear layer initialised as GPT-2, Llama and BERT do: weight N(0, std), bias 0.
torch::nn::Linear normal_linear(int64_t in, int64_t out, bool bias, double std);

// A LayerNorm (weight and bias) or RMSNorm (weight) over the last dimension.
struct LmNormImpl : torch::nn::Module {
  LmNormImpl(int64_t dim, bool rms, double eps);
  torch::Tensor forward(const torch::Tensor& x);  // [..., D] -> [..., D]
  bool rms;
  double eps;
  torch::Tensor weight, bias;
};
TORCH_MODULE(LmNorm);

// Keys and values of one layer for a whole generation: [B, KV, capacity, hd] each.
struct LayerKv {
  torch::Tensor k, v;
};
struct KvCache {
  std::vector<LayerKv> layers;
  int64_t length = 0;    // positions written
  int64_t capacity = 0;  // positions allocated: prompt + gen
  int64_t bytes() const;
};

// Where the tokens of one forward sit and where their keys and values go in a cache. One block
// code path serves three cases:
//  - a uniform batch (generate's prefill and decode): tokens [B, T] at positions
//    start .. start + T - 1 in cache rows 0 .. B - 1;
//  - one slot's chunk of a prompt: tokens [1, T] at positions start .. start + T - 1 in cache
//    row `row`, attending to the chunks before it in that row too;
//  - a ragged decode: tokens [B, 1], row i at its own position positions[i] in cache row i,
//    attending to keys 0 .. positions[i] of its row (the keys 0 .. keys - 1 are read, those
//    beyond a row's position hidden).
struct KvPlace {
  KvCache* cache = nullptr;  // none: attention over the forward's own tokens only
  int64_t start = 0;         // uniform batch, chunk: the first token's position
  int64_t row = 0;           // the first cache row written
  bool allocate = false;     // (re)allocate [B, KV, capacity, hd] first unless the cache fits
  torch::Tensor positions;   // ragged decode: [B] int64 on the model's device; else undefined
  int64_t keys = 0;          // ragged decode: max(positions) + 1
};

// The network: token (and position) embeddings, the blocks, the final norm, the output
// projection.
struct DecoderLmImpl : torch::nn::Module {
  // `positions`: rotary table length, the longest sequence a step feeds (prompt + gen, seq).
  DecoderLmImpl(const DecoderSpec& spec, int64_t positions);

  // Hidden states [B, T, D] of tokens [B, T] at positions start .. start + T - 1, before the
  // final norm. With a cache, each layer writes its keys and values at those positions and
  // attends over positions 0 .. start + T - 1; without, over the T tokens only. A cache is
  // allocated for its capacity when start is 0 (generate's prefill).
  torch::Tensor hidden(const torch::Tensor& tokens, int64_t start, KvCache* cache);
  // The same for tokens [B, T] placed as `place` says (the three cases of KvPlace).
  torch::Tensor hidden(const torch::Tensor& tokens, const KvPlace& place);
  // Extends the rotary tables to cover positions 0 .. positions - 1 (no-op when they do, or
  // with learned positions): the constructor sizes them for the fixed-size steps only.
  void cover_positions(int64_t positions);
  // Final norm and output projection: [..., D] -> [..., V].
  torch::Tensor logits(const torch::Tensor& hidden);
  // Logits at every position of tokens [B, T], without a cache: [B, T, V].
  torch::Tensor sequence_logits(const torch::Tensor& tokens);

  DecoderSpec spec;
  torch::nn::Embedding embed_tokens{nullptr}, embed_positions{nullptr};
  torch::nn::ModuleList layers{nullptr};
  LmNorm norm{nullptr};
  torch::nn::Linear lm_head{nullptr};
  torch::Tensor rope_cos, rope_sin;  // [positions, hd / 2] float (rotary only)
};
TORCH_MODULE(DecoderLm);

// The model of a preset workload (gpt2, llama): checks the spec's dimensions and the config's
// sizes against the spec's context (named with the config's `preset`), and trains at the
// config's `lr`, or at `preset_lr` where that is 0.
std::unique_ptr<Model> build_preset_decoder(const std::string& workload, const DecoderSpec& spec,
                                            const Config& config, double preset_lr, int64_t seq_cap,
                                            const torch::Device& device);

// Builds the Model (also a GenerativeModel and a SlottedGenerator) of a decoder spec. Batches:
// training [B, seq + 1] token ids (inputs and their next-token targets), units B * seq tokens;
// inference the prompt [B, prompt], units B * gen output tokens. Inference is a greedy generation
// (plumb::generate).
std::unique_ptr<Model> make_decoder_lm_model(const DecoderSpec& spec,
                                             const AdamWSettings& optimizer, const LmSizes& sizes,
                                             const torch::Device& device);

}  // namespace plumb::workloads
