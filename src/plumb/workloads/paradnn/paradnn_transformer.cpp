// paradnn_transformer: a parameterised decoder-only transformer joining ParaDnn's generated
// families (Wang, Wei & Brooks, MLSys 2020, Sec. 2.1: fully-connected, convolutional and
// recurrent generators whose hyperparameters are swept over ranges). ParaDnn has no transformer
// generator; plumb builds one from the llama workload's blocks (llm/decoder_lm.h), the
// architecture today's generative models share, so `plumb sweep` spans transformers the way it
// spans the paper's three families:
//
//   token ids [B, T] -> embedding (vocab x d_model)                              [B, T, D]
//   -> `layers` pre-norm blocks: RMSNorm -> attention with `heads` query and `kv_heads`
//      key/value heads (rotary positions, theta 10,000) -> residual; RMSNorm -> SwiGLU
//      feed-forward of width `ffn` -> residual                                  [B, T, D]
//   -> RMSNorm -> output projection (untied) over the vocabulary                 [B, T, V]
//
// Training: causal LM loss over `context` tokens, AdamW with Llama 2's settings (lr 3e-4, betas
// (0.9, 0.95), eps 1e-5, weight decay 0.1, clip 1.0). Inference: a prompt of `context` tokens,
// then greedy generation of `gen` tokens with a KV cache (prefill + gen - 1 decode iterations).
//
// Parameters (no biases; hd = d_model / heads):
//   L (d_model (heads hd) + 2 d_model (kv_heads hd) + (heads hd) d_model + 3 d_model ffn
//      + 2 d_model) + 2 vocab d_model + d_model.
// Default: 8 layers, d_model 512, 8 heads, 8 kv heads, ffn 1536 (Meta's Llama rule: 2/3 x 4 d_model
// rounded up to a multiple of 256), vocab 32000, context 256, gen 32, batch 8:
// 60,039,680 parameters (half of them the two vocabulary tables).
#include "plumb/workloads/paradnn/paradnn_transformer.h"

#include <string>

#include "plumb/workloads/llm/decoder_lm.h"

namespace plumb::workloads {
namespace {

DecoderSpec paradnn_transformer_spec(const Config& c) {
  DecoderSpec s = llama_style_spec();
  s.layers = c.get_int("layers");
  s.d_model = c.get_int("d_model");
  s.heads = c.get_int("heads");
  s.kv_heads = c.get_int("kv_heads");
  s.ffn = c.get_int("ffn");
  s.vocab = c.get_int("vocab");
  s.context = c.get_int("context") + c.get_int("gen");  // the longest sequence a step feeds
  return s;
}

}  // namespace

Workload make_paradnn_transformer() {
  Workload w;
  w.info.name = "paradnn_transformer";
  w.info.suites = {"paradnn"};
  w.info.domain = "parameterised transformer";
  w.info.description =
      "Transformer generator (Llama-style decoder): layers x [RMSNorm, GQA attention with "
      "rotary positions, RMSNorm, SwiGLU], untied output; training = causal LM over `context` "
      "tokens, inference = `context`-token prompt + `gen` greedy tokens with a KV cache";
  w.info.source =
      "Wang, Wei & Brooks, MLSys 2020 (ParaDnn's generated families, Sec. 2.1); blocks of the "
      "llama workload (Touvron et al., Llama 2, 2023: architecture and AdamW settings)";
  w.info.throughput_unit = "tokens/s";
  w.info.small_batch = 1;
  w.info.tiny_config = {"batch=2", "layers=2", "d_model=32", "heads=4", "kv_heads=2",
                        "ffn=64",  "vocab=97", "context=6",  "gen=4"};
  w.info.suite_settings = {"context=64", "gen=8"};
  w.default_config = [] {
    Config c;
    c.add_int("batch", 8, "sequences (training) or requests decoded together (inference)");
    c.add_int("layers", 8, "transformer blocks");
    c.add_int("d_model", 512, "model width (a multiple of heads)");
    c.add_int("heads", 8, "query heads");
    c.add_int("kv_heads", 8, "key/value heads (a divisor of heads; fewer = grouped-query)");
    c.add_int("ffn", 1536, "SwiGLU width (Meta's Llama rule: 2/3 x 4 d_model rounded up to 256)");
    c.add_int("vocab", 32000, "vocabulary, input and output (Llama 2's 32,000)", 2);
    c.add_int("context", 256, "training: tokens per sequence; inference: prompt tokens", 2);
    c.add_int("gen", 32, "inference: output tokens per request, the first from the prefill");
    c.add_double("lr", 3e-4, "AdamW learning rate (Llama 2: 3e-4)");
    add_adamw_keys(c, {3e-4, 0.9, 0.95, 1e-5, 0.1, 1.0}, "Llama 2 Sec. 2.2");
    return c;
  };
  w.transformer_shape = [](const Config& c) { return decoder_shape(paradnn_transformer_spec(c)); };
  w.build = [](const Config& c, const torch::Device& device) -> std::unique_ptr<Model> {
    const DecoderSpec spec = paradnn_transformer_spec(c);
    check_decoder_dims("paradnn_transformer", spec);
    const LmSizes sizes{c.get_int("batch"), c.get_int("context"), c.get_int("gen"),
                        c.get_int("context")};
    return make_decoder_lm_model(spec, adamw_settings(c, c.get_double("lr")), sizes, device);
  };
  return w;
}

}  // namespace plumb::workloads
