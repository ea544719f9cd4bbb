// llama: the Llama family decoder (Touvron et al., LLaMA, 2023; Llama 2, 2023; Grattafiori et
// al., The Llama 3 Herd of Models, 2024) as Meta's reference model.py and the Hugging Face
// LlamaForCausalLM build it:
//   - token embedding, no position table: rotary positions on queries and keys (theta 10,000 for
//     Llama 2 and TinyLlama, 500,000 for Llama 3; the "rotate half" form of Hugging Face);
//   - pre-norm blocks: RMSNorm (eps 1e-5, mean square in fp32) -> grouped-query attention
//     (q, k, v, o projections without biases; kv_heads key/value heads, each read by
//     heads / kv_heads query heads) -> residual; RMSNorm -> SwiGLU feed-forward
//     down(silu(gate(x)) * up(x)) -> residual;
//   - a final RMSNorm and an output projection, separate (untied) or the token embedding (tied:
//     Llama 3.2 1B);
//   - weights N(0, 0.02) (Hugging Face's initializer_range), norm weights 1; no dropout.
// Llama 3.2's rope scaling (long-context frequency interpolation) is omitted: it changes neither
// a shape nor a count, only the rotary frequencies beyond 8k positions.
// Training: causal LM loss, AdamW with Llama 2's settings (paper Sec. 2.2: lr 3e-4, betas
// (0.9, 0.95), eps 1e-5, weight decay 0.1, gradient clip 1.0); TinyLlama's lr 4e-4 (Zhang et
// al. 2024, Sec. 2.3); warm-up and cosine decay not modelled.
//
// Presets (layers, d_model, heads, kv_heads, ffn, vocab, context, tied) from the released
// config.json files: tinyllama-1.1b 22/2048/32/4/5632/32000/2048/no: 1,100,048,384 parameters;
// llama-3.2-1b 16/2048/32/8/8192/128256/131072/yes: 1,235,814,400; llama-2-7b
// 32/4096/32/32/11008/32000/4096/no: 6,738,415,616; llama-3-8b 32/4096/32/8/14336/128256/8192/no:
// 8,030,261,248 (derivations in docs/workloads.md). The KV cache is allocated for
// prompt + gen positions, never the whole context (Llama 3.2's 131,072 would be 4 GiB per request
// in fp32).
#include "plumb/workloads/llm/llama.h"

#include <string>

#include "plumb/core/errors.h"
#include "plumb/workloads/llm/decoder_lm.h"

namespace plumb::workloads {
namespace {

// TinyLlama trained on 2048-token sequences; longer contexts train on that too unless seq says.
constexpr int64_t kLlamaTrainingSeq = 2048;

struct LlamaPreset {
  const char* name;
  int64_t layers, d_model, heads, kv_heads, ffn, vocab, context;
  bool tied;
  double rope_theta, lr;
};

constexpr LlamaPreset kLlamaPresets[] = {
    {"tinyllama-1.1b", 22, 2048, 32, 4, 5632, 32000, 2048, false, 10000, 4e-4},
    {"llama-3.2-1b", 16, 2048, 32, 8, 8192, 128256, 131072, true, 500000, 3e-4},
    {"llama-2-7b", 32, 4096, 32, 32, 11008, 32000, 4096, false, 10000, 3e-4},
    {"llama-3-8b", 32, 4096, 32, 8, 14336, 128256, 8192, false, 500000, 3e-4}};

const LlamaPreset& llama_preset(const std::string& name) {
  for (const auto& p : kLlamaPresets)
    if (name == p.name) return p;
  PLUMB_ASSERT(false, "unknown llama preset");
  return kLlamaPresets[0];
}

DecoderSpec llama_spec(const Config& c) {
  const LlamaPreset& p = llama_preset(c.get_string("preset"));
  DecoderSpec s = llama_style_spec();
  s.layers = preset_or(c, "layers", p.layers);
  s.d_model = preset_or(c, "d_model", p.d_model);
  s.heads = preset_or(c, "heads", p.heads);
  s.kv_heads = preset_or(c, "kv_heads", p.kv_heads);
  s.ffn = preset_or(c, "ffn", p.ffn);
  s.vocab = preset_or(c, "vocab", p.vocab);
  s.context = preset_or(c, "context", p.context);
  s.rope_theta = preset_or(c, "rope_theta", p.rope_theta);
  const std::string& tie = c.get_string("tied");
  s.tied = tie == "preset" ? p.tied : tie == "yes";
  return s;
}

}  // namespace

Workload make_llama() {
  Workload w;
  w.info.name = "llama";
  w.info.suites = {"llm"};
  w.info.domain = "language modelling (generative)";
  w.info.description =
      "Llama decoder: RMSNorm, rotary positions, SwiGLU, grouped-query attention, no biases; "
      "presets tinyllama-1.1b (default), llama-3.2-1b (tied), llama-2-7b, llama-3-8b; inference "
      "= greedy generation with a KV cache (prefill, then one decode per token)";
  w.info.source =
      "Touvron et al., Llama 2, 2023 (architecture, AdamW settings); Grattafiori et al., The "
      "Llama 3 Herd of Models, 2024; Zhang et al., TinyLlama, 2024; dimensions from the released "
      "config.json files";
  w.info.throughput_unit = "tokens/s";
  w.info.small_batch = 1;
  w.info.tiny_config = {"batch=2", "layers=2", "d_model=32", "heads=4", "kv_heads=2",
                        "ffn=64",  "vocab=97", "prompt=6",   "gen=4",   "seq=8"};
  w.info.suite_settings = {"prompt=16", "gen=4", "seq=32"};
  // TinyLlama's fp32 weights, gradients and two AdamW moments are 17.6 GB: the suite measures
  // generation only (4.4 GB of weights read per decoded token: 16 + 4 tokens keep a step near
  // ten seconds on a 2-core machine); `plumb run llama --mode train` trains where memory allows.
  w.info.train_by_default = false;
  w.default_config = [] {
    Config c;
    add_lm_size_keys(c, 1,
                     "sequences (training) or requests decoded together (inference); Llama 2 "
                     "trained on 4M-token batches",
                     kLlamaTrainingSeq,
                     "training: tokens per sequence (TinyLlama trained on 2048)");
    c.add_choice("preset", "tinyllama-1.1b",
                 {"tinyllama-1.1b", "llama-3.2-1b", "llama-2-7b", "llama-3-8b"},
                 "model: tinyllama-1.1b (1.10B), llama-3.2-1b (1.24B, tied), llama-2-7b (6.74B), "
                 "llama-3-8b (8.03B)");
    c.add_int("layers", 0, "blocks, 0 = the preset's (22 / 16 / 32 / 32)", 0);
    c.add_int("d_model", 0, "model width, 0 = the preset's (2048 / 2048 / 4096 / 4096)", 0);
    c.add_int("heads", 0, "query heads, 0 = the preset's (32)", 0);
    c.add_int("kv_heads", 0, "key/value heads, 0 = the preset's (4 / 8 / 32 / 8)", 0);
    c.add_int("ffn", 0, "SwiGLU width, 0 = the preset's (5632 / 8192 / 11008 / 14336)", 0);
    c.add_int("vocab", 0, "vocabulary, 0 = the preset's (32000 / 128256 / 32000 / 128256)", 0);
    c.add_int("context", 0,
              "longest prompt + gen (or seq) the model takes, 0 = the preset's (2048 / 131072 / "
              "4096 / 8192)",
              0);
    c.add_double("rope_theta", 0,
                 "rotary base, 0 = the preset's (10,000 Llama 2 and TinyLlama; 500,000 Llama 3)");
    c.add_choice("tied", "preset", {"preset", "yes", "no"},
                 "output projection = token embedding: preset = the preset's (Llama 3.2 1B yes, "
                 "others no)");
    c.add_double("lr", 0,
                 "AdamW learning rate, 0 = the preset's (TinyLlama 4e-4; Llama 2 and 3: 3e-4)");
    add_adamw_keys(c, {3e-4, 0.9, 0.95, 1e-5, 0.1, 1.0}, "Llama 2 Sec. 2.2");
    return c;
  };
  w.transformer_shape = [](const Config& c) { return decoder_shape(llama_spec(c)); };
  w.build = [](const Config& c, const torch::Device& device) -> std::unique_ptr<Model> {
    return build_preset_decoder("llama", llama_spec(c), c, llama_preset(c.get_string("preset")).lr,
                                kLlamaTrainingSeq, device);
  };
  return w;
}

}  // namespace plumb::workloads
