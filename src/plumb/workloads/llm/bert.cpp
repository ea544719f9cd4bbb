// bert: the BERT encoder (Devlin et al., BERT: Pre-training of Deep Bidirectional Transformers
// for Language Understanding, NAACL 2019), base and large, as google-research/bert's
// modeling.py builds it (and Hugging Face's BertModel, layer for layer):
//   - word (30,522 WordPiece), position (512 learned) and token-type (2) embeddings, summed,
//     LayerNorm (eps 1e-12), dropout 0.1;
//   - post-norm layers: x = LayerNorm(x + Dropout(o_proj(Attention(x)))), bidirectional
//     attention (no mask: every synthetic sequence fills its length) with q, k, v, o projections
//     with biases; x = LayerNorm(x + Dropout(down(GELU(up(x))))), GELU exact (erf);
//   - weights N(0, 0.02) (initializer_range; modeling.py truncates at 2 std, not modelled),
//     biases 0, LayerNorm weight 1.
// Two heads, both in the module (each mode runs one):
//   - inference: MLPerf's BERT-Large SQuAD v1.1 model (BertForQuestionAnswering): a span head
//     qa_outputs d -> 2 (start and end logits) on every position, at sequence 384;
//   - training: the masked-LM pre-training head (BertForMaskedLM's cls.predictions): dense d -> d,
//     GELU, LayerNorm, then the decoder tied to the word embedding with its own bias [V], on the
//     masked positions only; 15% of each sequence's positions (rounded) masked, of which 80%
//     become [MASK], 10% a random word, 10% stay; AdamW as the paper's pre-training (lr 1e-4,
//     betas (0.9, 0.999), weight decay 0.01 on matrices, eps 1e-6 as modeling.py's optimizer,
//     clip 1.0; warm-up and linear decay not modelled). Next-sentence prediction is left out
//     (RoBERTa showed it unnecessary, and it needs the pooler): no pooler is built.
// Trainable parameters (derivation in docs/workloads.md): encoder without pooler base
// 108,891,648 / large 334,092,288 (Hugging Face BertModel with its pooler: 109,482,240 /
// 335,141,888; the papers' "110M" / "340M"), plus the MLM head (d^2 + 3d + V) and the span head
// (2d + 2): base 109,515,836, large 335,176,508.
#include "plumb/workloads/llm/bert.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "plumb/core/errors.h"
#include "plumb/core/layer_scope.h"
#include "plumb/workloads/common/parallel_normal.h"
#include "plumb/workloads/llm/decoder_lm.h"

namespace plumb::workloads {
namespace {

namespace nn = torch::nn;
namespace F = torch::nn::functional;

constexpr double kBertNormEps = 1e-12;
constexpr double kBertInitStd = 0.02;
constexpr int64_t kBertMaskId = 103;  // [MASK] in the uncased WordPiece vocabulary

struct BertSpec {
  int64_t layers = 0, d_model = 0, heads = 0, ffn = 0, vocab = 0, positions = 0;
  double dropout = 0.1;
};

struct BertLayerImpl : nn::Module {
  explicit BertLayerImpl(const BertSpec& s) : spec(s) {
    auto attention = register_module("attn", std::make_shared<nn::Module>());
    for (const char* name : {"q_proj", "k_proj", "v_proj", "o_proj"})
      projections.push_back(attention->register_module(
          name, normal_linear(s.d_model, s.d_model, true, kBertInitStd)));
    attn_norm = register_module("attn_norm", LmNorm(s.d_model, false, kBertNormEps));
    auto mlp = register_module("mlp", std::make_shared<nn::Module>());
    up_proj = mlp->register_module("up_proj", normal_linear(s.d_model, s.ffn, true, kBertInitStd));
    down_proj =
        mlp->register_module("down_proj", normal_linear(s.ffn, s.d_model, true, kBertInitStd));
    mlp_norm = register_module("mlp_norm", LmNorm(s.d_model, false, kBertNormEps));
  }

  torch::Tensor dropped(const torch::Tensor& x) const {
    return F::dropout(x, F::DropoutFuncOptions().p(spec.dropout).training(is_training()));
  }

  // x: [B, S, D] -> [B, S, D]
  torch::Tensor forward(const std::string& path, torch::Tensor x) {
    const std::string a = path + ".attn", m = path + ".mlp";
    const int64_t heads = spec.heads;
    const auto split = [heads](const torch::Tensor& t) {  // [B, S, D] -> [B, H, S, hd]
      return t.view({t.size(0), t.size(1), heads, t.size(2) / heads}).transpose(1, 2);
    };
    auto q = split(run_layer(a + ".q_proj", projections[0], x));
    auto k = split(run_layer(a + ".k_proj", projections[1], x));
    auto v = split(run_layer(a + ".v_proj", projections[2], x));
    torch::Tensor context;
    {
      LayerScope scope(a);
      context = scope.output(
          grouped_attention(q, k, v, 0, false, spec.dropout, is_training()));  // [B, S, D]
    }
    auto out = run_layer(a + ".o_proj", projections[3], context);
    {
      LayerScope scope(path + ".attn_norm");  // the residual add counts to the norm after it
      x = scope.output(attn_norm->forward(x + dropped(out)));
    }
    auto up = run_layer(m + ".up_proj", up_proj, x);  // [B, S, F]
    {
      LayerScope scope(m);
      up = scope.output(torch::gelu(up));  // exact (erf) GELU, as modeling.py
    }
    auto down = run_layer(m + ".down_proj", down_proj, up);  // [B, S, D]
    LayerScope scope(path + ".mlp_norm");
    return scope.output(mlp_norm->forward(x + dropped(down)));
  }

  BertSpec spec;
  std::vector<nn::Linear> projections;  // q, k, v, o
  LmNorm attn_norm{nullptr}, mlp_norm{nullptr};
  nn::Linear up_proj{nullptr}, down_proj{nullptr};
};
TORCH_MODULE(BertLayer);

struct BertImpl : nn::Module {
  explicit BertImpl(const BertSpec& s) : spec(s) {
    auto embeddings = register_module("embeddings", std::make_shared<nn::Module>());
    word = embeddings->register_module("word_embeddings", nn::Embedding(s.vocab, s.d_model));
    position =
        embeddings->register_module("position_embeddings", nn::Embedding(s.positions, s.d_model));
    token_type = embeddings->register_module("token_type_embeddings", nn::Embedding(2, s.d_model));
    embed_norm = embeddings->register_module("norm", LmNorm(s.d_model, false, kBertNormEps));
    layers = register_module("layers", nn::ModuleList());
    for (int64_t l = 0; l < s.layers; ++l) layers->push_back(BertLayer(s));
    auto mlm = register_module("mlm", std::make_shared<nn::Module>());
    mlm_dense =
        mlm->register_module("dense", normal_linear(s.d_model, s.d_model, true, kBertInitStd));
    mlm_norm = mlm->register_module("norm", LmNorm(s.d_model, false, kBertNormEps));
    mlm_bias = mlm->register_parameter("bias", torch::zeros({s.vocab}));
    qa_outputs = register_module("qa_outputs", normal_linear(s.d_model, 2, true, kBertInitStd));
    torch::NoGradGuard no_grad;
    for (auto* table : {&word, &position, &token_type})
      fill_normal_parallel((*table)->weight, kBertInitStd);
  }

  // ids, token types: [B, S] -> hidden states [B, S, D]
  torch::Tensor encode(const torch::Tensor& ids, const torch::Tensor& types) {
    auto x = run_layer("embeddings.word_embeddings", word, ids);  // [B, S, D]
    {
      LayerScope scope("embeddings.position_embeddings");
      x = scope.output(x + position->forward(torch::arange(ids.size(1), ids.options())));
    }
    {
      LayerScope scope("embeddings.token_type_embeddings");
      x = scope.output(x + token_type->forward(types));
    }
    {
      LayerScope scope("embeddings.norm");
      x = scope.output(F::dropout(embed_norm->forward(x),
                                  F::DropoutFuncOptions().p(spec.dropout).training(is_training())));
    }
    for (size_t l = 0; l < layers->size(); ++l)
      x = layers[l]->as<BertLayer>()->forward("layers." + std::to_string(l), x);
    return x;
  }

  // Masked-LM logits at the hidden states [B, M, D] of the masked positions: [B, M, V].
  torch::Tensor mlm_logits(const torch::Tensor& hidden) {
    auto h = run_layer("mlm.dense", mlm_dense, hidden);
    {
      LayerScope scope("mlm.norm");
      h = scope.output(mlm_norm->forward(torch::gelu(h)));
    }
    LayerScope scope("mlm");
    return scope.output(F::linear(h, word->weight, mlm_bias));  // tied decoder, own bias
  }

  BertSpec spec;
  nn::Embedding word{nullptr}, position{nullptr}, token_type{nullptr};
  LmNorm embed_norm{nullptr}, mlm_norm{nullptr};
  nn::ModuleList layers{nullptr};
  nn::Linear mlm_dense{nullptr}, qa_outputs{nullptr};
  torch::Tensor mlm_bias;
};
TORCH_MODULE(Bert);

// Batch layout: tensors[0] = token ids [B, S] (training: after masking), tensors[1] = token types
// [B, S] (0 for the first half of each sequence, the question or sentence A; 1 after), and in
// training tensors[2] = masked positions [B, M], tensors[3] = their original ids [B, M]. One unit
// per token.
class BertModel : public Model {
 public:
  BertModel(const BertSpec& spec, const AdamWSettings& optimizer, int64_t batch, int64_t seq,
            double mask_fraction, const torch::Device& device)
      : net_(spec),
        settings_(optimizer),
        batch_(batch),
        seq_(seq),
        masked_(std::max<int64_t>(1, std::llround(mask_fraction * static_cast<double>(seq)))),
        device_(device) {
    net_->to(device);
    optimizer_ = make_lm_adamw(net_->parameters(), settings_);
  }

  nn::Module& module() override { return *net_; }

  Batch make_batch() override {
    const auto ids = torch::TensorOptions().dtype(torch::kLong).device(device_);
    // Words avoid the special ids below [MASK] + 1 where the vocabulary has room for them.
    const int64_t vocab = net_->spec.vocab;
    const int64_t mask_id = std::min(kBertMaskId, vocab - 1);
    const int64_t first_word = vocab > kBertMaskId + 1 ? kBertMaskId + 1 : 0;
    const int64_t last_word = vocab > kBertMaskId + 1 ? vocab : vocab - 1;
    auto tokens = torch::randint(first_word, last_word, {batch_, seq_}, ids);  // [B, S]
    auto types = (torch::arange(seq_, ids) >= seq_ / 2).to(torch::kLong).expand({batch_, seq_});
    Batch b;
    b.units = static_cast<double>(batch_ * seq_);
    if (!net_->is_training()) {
      b.tensors = {tokens, types.contiguous()};
      return b;
    }
    auto positions = torch::rand({batch_, seq_}, torch::TensorOptions().device(device_))
                         .argsort(/*dim=*/1, /*descending=*/false)
                         .narrow(1, 0, masked_);  // [B, M] distinct per sequence
    auto labels = tokens.gather(1, positions);    // [B, M]
    auto draw = torch::rand({batch_, masked_}, torch::TensorOptions().device(device_));
    auto random_words = torch::randint(first_word, last_word, {batch_, masked_}, ids);
    auto replaced = torch::where(draw < 0.8, torch::full_like(labels, mask_id),
                                 torch::where(draw < 0.9, random_words, labels));
    const torch::Tensor masked = tokens.scatter(1, positions, replaced);  // [B, S]
    b.tensors = {masked, types.contiguous(), positions, labels};
    return b;
  }

  double train_step(const Batch& b) override {
    {
      LayerScope scope("optimizer");
      optimizer_->zero_grad();
    }
    auto hidden = net_->encode(b.tensors[0], b.tensors[1]);  // [B, S, D]
    const auto& positions = b.tensors[2];                    // [B, M]
    torch::Tensor picked;
    {
      LayerScope scope("mlm");
      picked = scope.output(hidden.gather(
          1,
          positions.unsqueeze(2).expand({positions.size(0), positions.size(1), hidden.size(2)})));
    }
    auto logits = net_->mlm_logits(picked);  // [B, M, V]
    torch::Tensor loss;
    {
      LayerScope scope("loss");
      loss = scope.output(F::cross_entropy(logits.reshape({-1, logits.size(2)}).to(torch::kFloat),
                                           b.tensors[3].reshape(-1)));
    }
    lm_update(*optimizer_, net_->parameters(), settings_, loss);
    return loss.item<double>();
  }

  double infer_step(const Batch& b) override { return span_logits(b).sum().item<double>(); }
  torch::Tensor infer_output(const Batch& b) override { return span_logits(b); }

 private:
  // Start and end logits of every position: [B, S, 2].
  torch::Tensor span_logits(const Batch& b) {
    return run_layer("qa_outputs", net_->qa_outputs, net_->encode(b.tensors[0], b.tensors[1]));
  }

  Bert net_;
  AdamWSettings settings_;
  int64_t batch_, seq_, masked_;
  torch::Device device_;
  std::unique_ptr<torch::optim::AdamW> optimizer_;
};

BertSpec bert_spec(const Config& c) {
  const bool large = c.get_string("preset") == "large";
  BertSpec s;
  s.layers = preset_or(c, "layers", int64_t{large ? 24 : 12});
  s.d_model = preset_or(c, "d_model", int64_t{large ? 1024 : 768});
  s.heads = preset_or(c, "heads", int64_t{large ? 16 : 12});
  s.ffn = preset_or(c, "ffn", 4 * s.d_model);
  s.vocab = c.get_int("vocab");
  s.positions = c.get_int("positions");
  s.dropout = c.get_double("dropout");
  return s;
}

TransformerShape bert_shape(const Config& c) {
  const BertSpec s = bert_spec(c);
  TransformerShape shape;
  shape.layers = s.layers;
  shape.d_model = s.d_model;
  shape.heads = s.heads;
  shape.kv_heads = s.heads;
  shape.head_dim = s.d_model / s.heads;
  shape.ffn = s.ffn;
  shape.vocab = s.vocab;
  shape.max_positions = s.positions;
  shape.gated_mlp = false;
  shape.linear_bias = true;
  shape.layer_norm = true;  // the embeddings' LayerNorm is the shape's one norm outside layers
  shape.learned_positions = true;
  shape.tied_embedding = true;  // the MLM decoder is the word embedding
  shape.causal = false;
  // Token-type table, MLM head (dense, LayerNorm, decoder bias), span head.
  shape.extra_parameters = 2 * s.d_model + (s.d_model * s.d_model + s.d_model + 2 * s.d_model) +
                           s.vocab + (2 * s.d_model + 2);
  return shape;
}

}  // namespace

Workload make_bert() {
  Workload w;
  w.info.name = "bert";
  w.info.suites = {"llm"};
  w.info.domain = "language understanding (encoder)";
  w.info.description =
      "BERT encoder, post-norm, GELU, learned positions and token types; presets large (default, "
      "MLPerf's SQuAD model) and base; inference = span (start/end) logits at sequence 384, "
      "training = masked LM (15%) with the tied decoder, AdamW";
  w.info.source =
      "Devlin et al., BERT, NAACL 2019 (Sec. 3, A.2; google-research/bert modeling.py); MLPerf "
      "Inference BERT-Large SQuAD v1.1 (sequence 384)";
  w.info.throughput_unit = "tokens/s";
  w.info.small_batch = 1;
  w.info.tiny_config = {"batch=2", "layers=2", "d_model=32",   "heads=4",
                        "ffn=64",  "vocab=97", "positions=16", "seq=8"};
  w.info.suite_settings = {"preset=base", "seq=128"};
  w.default_config = [] {
    Config c;
    c.add_int("batch", 1,
              "sequences per batch (MLPerf single-stream: 1; the paper pre-trained on 256)");
    c.add_int("seq", 384,
              "tokens per sequence (MLPerf SQuAD: 384; the paper pre-trained at 128, then 512)", 2);
    c.add_choice("preset", "large", {"base", "large"},
                 "model: base (12 layers, 768, 12 heads) or large (24, 1024, 16)");
    c.add_int("layers", 0, "layers, 0 = the preset's (12 / 24)", 0);
    c.add_int("d_model", 0, "hidden size, 0 = the preset's (768 / 1024)", 0);
    c.add_int("heads", 0, "attention heads, 0 = the preset's (12 / 16)", 0);
    c.add_int("ffn", 0, "intermediate size, 0 = 4 d_model", 0);
    c.add_int("vocab", 30522, "WordPiece vocabulary (uncased: 30,522)", 2);
    c.add_int("positions", 512, "learned position rows (512)", 2);
    c.add_double("dropout", 0.1, "hidden and attention dropout in training (0.1)");
    c.add_double("mask_fraction", 0.15, "training: fraction of positions masked (0.15)");
    c.add_double("lr", 1e-4, "AdamW learning rate (paper A.2: 1e-4)");
    add_adamw_keys(c, {1e-4, 0.9, 0.999, 1e-6, 0.01, 1.0}, "paper A.2, modeling.py optimizer");
    return c;
  };
  w.transformer_shape = bert_shape;
  w.build = [](const Config& c, const torch::Device& device) -> std::unique_ptr<Model> {
    const BertSpec spec = bert_spec(c);
    if (spec.d_model % spec.heads != 0)
      throw UsageError("bert: d_model " + std::to_string(spec.d_model) +
                       " is not a multiple of heads " + std::to_string(spec.heads));
    if (c.get_int("seq") > spec.positions)
      throw UsageError("bert: seq " + std::to_string(c.get_int("seq")) + " exceeds the model's " +
                       std::to_string(spec.positions) + " positions; lower seq");
    return std::make_unique<BertModel>(spec, adamw_settings(c, c.get_double("lr")),
                                       c.get_int("batch"), c.get_int("seq"),
                                       c.get_double("mask_fraction"), device);
  };
  return w;
}

}  // namespace plumb::workloads
