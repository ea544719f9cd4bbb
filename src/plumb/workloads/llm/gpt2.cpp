// gpt2: GPT-2 (Radford et al., Language Models are Unsupervised Multitask Learners, 2019), as
// OpenAI's released code (github.com/openai/gpt-2, src/model.py) builds it:
//   - token and learned position embeddings (n_ctx 1024 rows), vocabulary 50257 (byte-level BPE);
//   - n_layer pre-norm blocks: LayerNorm (eps 1e-5) -> attention (q, k, v, o projections with
//     biases; model.py fuses q, k, v into one c_attn matrix of the same parameters) -> residual;
//     LayerNorm -> dense 4d + GELU (tanh approximation, model.py's gelu) -> dense d -> residual;
//   - a final LayerNorm; the output projection is the token embedding (tied, no bias);
//   - dropout 0.1 on embeddings, attention weights and residual branches (training only: the
//     Hugging Face config's resid/embd/attn_pdrop; the paper does not state it);
//   - initialisation as model.py: weights N(0, 0.02), position table N(0, 0.01), biases 0,
//     LayerNorm weight 1; the paper's "scale the weights of residual layers at initialization
//     by 1/sqrt(N)" (N = 2 n_layer residual layers) on o_proj and down_proj.
// Training: causal LM loss over every position, AdamW. The GPT-2 paper publishes neither its
// learning rates ("manually tuned") nor its optimizer settings; plumb takes GPT-3's (Brown et
// al. 2020, Table 2.1 and Appendix B) for the nearest sizes: lr 6e-4 / 3e-4 / 2.5e-4 / 2e-4,
// betas (0.9, 0.95), eps 1e-8, weight decay 0.1, gradient clip 1.0; the warm-up and cosine
// decay are not modelled (a step's cost does not depend on its learning rate).
//
// Presets (n_layer, d_model, heads): small 12/768/12, medium 24/1024/16, large 36/1280/20,
// xl 48/1600/25 (the paper's Table 2, heads from the released hparams.json). Trainable
// parameters L (12 d^2 + 13 d) + V d + 1024 d + 2 d: 124,439,808 / 354,823,168 / 774,030,080 /
// 1,557,611,200 (derivation in docs/workloads.md).
#include "plumb/workloads/llm/gpt2.h"

#include <string>

#include "plumb/core/errors.h"
#include "plumb/workloads/llm/decoder_lm.h"

namespace plumb::workloads {
namespace {

// GPT-2 trained on its whole 1024-token context.
constexpr int64_t kGpt2TrainingSeq = 1024;

struct Gpt2Preset {
  const char* name;
  int64_t layers, d_model, heads;
  double lr;  // GPT-3 Table 2.1, nearest size
};

constexpr Gpt2Preset kGpt2Presets[] = {{"small", 12, 768, 12, 6e-4},
                                       {"medium", 24, 1024, 16, 3e-4},
                                       {"large", 36, 1280, 20, 2.5e-4},
                                       {"xl", 48, 1600, 25, 2e-4}};

const Gpt2Preset& gpt2_preset(const std::string& name) {
  for (const auto& p : kGpt2Presets)
    if (name == p.name) return p;
  PLUMB_ASSERT(false, "unknown gpt2 preset");
  return kGpt2Presets[0];
}

DecoderSpec gpt2_spec(const Config& c) {
  const Gpt2Preset& p = gpt2_preset(c.get_string("preset"));
  DecoderSpec s;
  s.layers = preset_or(c, "layers", p.layers);
  s.d_model = preset_or(c, "d_model", p.d_model);
  s.heads = preset_or(c, "heads", p.heads);
  s.kv_heads = s.heads;
  s.ffn = preset_or(c, "ffn", 4 * s.d_model);
  s.vocab = c.get_int("vocab");
  s.context = c.get_int("positions");
  s.rms_norm = false;
  s.norm_eps = 1e-5;
  s.rotary = false;
  s.swiglu = false;
  s.bias = true;
  s.tied = true;
  s.dropout = c.get_double("dropout");
  s.init_std = 0.02;
  s.position_init_std = 0.01;
  s.scale_residual_init = true;
  return s;
}

}  // namespace

Workload make_gpt2() {
  Workload w;
  w.info.name = "gpt2";
  w.info.suites = {"llm"};
  w.info.domain = "language modelling (generative)";
  w.info.description =
      "GPT-2: learned positions, pre-norm LayerNorm blocks, GELU MLP 4d, biases, tied embedding; "
      "presets small (default, 124M) / medium / large / xl; inference = greedy generation with "
      "a KV cache (prefill over the prompt, then one decode per token)";
  w.info.source =
      "Radford et al., Language Models are Unsupervised Multitask Learners, 2019 (Table 2; "
      "openai/gpt-2 model.py and hparams.json); AdamW settings from GPT-3 (Brown et al. 2020, "
      "Table 2.1, Appendix B)";
  w.info.throughput_unit = "tokens/s";
  w.info.small_batch = 1;
  w.info.tiny_config = {"batch=2",  "layers=2",     "d_model=32", "heads=4", "ffn=64",
                        "vocab=97", "positions=16", "prompt=6",   "gen=4",   "seq=8"};
  w.info.suite_settings = {"prompt=32", "gen=8", "seq=64"};
  w.default_config = [] {
    Config c;
    add_lm_size_keys(c, 1,
                     "sequences (training) or requests decoded together (inference); GPT-2 "
                     "trained on batches of 512 sequences",
                     kGpt2TrainingSeq,
                     "training: tokens per sequence (GPT-2 trained on its whole context)");
    c.add_choice("preset", "small", {"small", "medium", "large", "xl"},
                 "model size: small 124M, medium 355M, large 774M, xl 1.56B (paper Table 2)");
    c.add_int("layers", 0, "blocks, 0 = the preset's (12 / 24 / 36 / 48)", 0);
    c.add_int("d_model", 0, "model width, 0 = the preset's (768 / 1024 / 1280 / 1600)", 0);
    c.add_int("heads", 0, "attention heads, 0 = the preset's (12 / 16 / 20 / 25)", 0);
    c.add_int("ffn", 0, "feed-forward width, 0 = 4 d_model (model.py)", 0);
    c.add_int("vocab", 50257, "byte-level BPE vocabulary (GPT-2: 50,257)", 2);
    c.add_int("positions", 1024, "rows of the learned position table: the context (n_ctx 1024)", 2);
    c.add_double("dropout", 0.1,
                 "dropout on embeddings, attention and residuals in training (0.1)");
    c.add_double("lr", 0,
                 "AdamW learning rate, 0 = the preset's (GPT-3 Table 2.1 at the nearest size: "
                 "6e-4 / 3e-4 / 2.5e-4 / 2e-4)");
    add_adamw_keys(c, {6e-4, 0.9, 0.95, 1e-8, 0.1, 1.0}, "GPT-3 Appendix B");
    return c;
  };
  w.transformer_shape = [](const Config& c) { return decoder_shape(gpt2_spec(c)); };
  w.build = [](const Config& c, const torch::Device& device) -> std::unique_ptr<Model> {
    return build_preset_decoder("gpt2", gpt2_spec(c), c, gpt2_preset(c.get_string("preset")).lr,
                                kGpt2TrainingSeq, device);
  };
  return w;
}

}  // namespace plumb::workloads
