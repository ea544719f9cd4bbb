// transformer: the Transformer "base" model for WMT14 English-German translation (Vaswani et
// al., Attention Is All You Need, NIPS 2017), the attention-only translation model of TBD
// (Zhu et al. 2018, WMT-14, vocabulary 37,000) and ParaDnn's real-model set:
//   - 6 encoder and 6 decoder layers, d_model 512, feed-forward 2048 (ReLU), 8 heads of 64;
//   - attention projections W^Q, W^K, W^V, W^O without biases (as the paper's equations and
//     tensor2tensor, the authors' code); feed-forward layers with biases (paper eq. 2);
//   - post-layer-norm sublayers, LayerNorm(x + Dropout(Sublayer(x))), dropout 0.1 on every
//     sublayer output and on the embedding + position sums;
//   - sinusoidal position encodings; one 37,000-entry BPE vocabulary shared by source and
//     target, whose embedding matrix (scaled by sqrt(d_model)) is also the pre-softmax
//     projection;
//   - label-smoothed (0.1) cross-entropy over the real target tokens;
//   - Adam (beta1 0.9, beta2 0.98, eps 1e-9) with the paper's learning rate
//     d_model^-0.5 * min(step^-0.5, step * warmup^-1.5), warmup 4000, set at every step;
//   - inference: beam search with beam 4 and length penalty alpha 0.6 (as the paper), the
//     decoder run incrementally with cached keys and values of past positions.
// Trainable parameters: 63,045,632 (derivation in docs/workloads.md; the paper rounds to 65 M).
#include "plumb/workloads/tbd/transformer.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "plumb/core/layer_scope.h"
#include "plumb/workloads/common/beam_search.h"
#include "plumb/workloads/common/synthetic_data.h"
#include "plumb/workloads/common/token_data.h"

namespace plumb::workloads {
namespace {

namespace nn = torch::nn;
namespace F = torch::nn::functional;

constexpr int64_t kPadId = 0;             // tensor2tensor's reserved ids: 0 PAD (also the decoder's
constexpr int64_t kTransformerEosId = 1;  // start symbol after the right shift), 1 EOS
constexpr int64_t kTransformerReservedIds = 2;

// Multi-head attention with separate bias-free projections. Keys/values of past decoder
// positions can be cached for incremental decoding.
struct MultiHeadAttentionImpl : nn::Module {
  MultiHeadAttentionImpl(int64_t d_model, int64_t heads_) : heads(heads_) {
    auto proj = [&](const char* name) {
      return register_module(name, nn::Linear(nn::LinearOptions(d_model, d_model).bias(false)));
    };
    q_proj = proj("q_proj");
    k_proj = proj("k_proj");
    v_proj = proj("v_proj");
    out_proj = proj("out_proj");
  }

  // [B, T, D] -> [B, H, T, D/H]
  torch::Tensor split(const torch::Tensor& x) const {
    return x.view({x.size(0), x.size(1), heads, x.size(2) / heads}).transpose(1, 2);
  }

  // Scaled dot-product attention of queries [B, H, Tq, dk] over keys/values [B, H, Tk, dk];
  // mask (true = blocked) broadcasts to [B, H, Tq, Tk]. Returns [B, Tq, D] after out_proj.
  // With past_k/past_v (incremental decoding), k and v of this step are appended to the
  // cached ones first.
  torch::Tensor attend(const std::string& path, const torch::Tensor& q, torch::Tensor k,
                       torch::Tensor v, const torch::Tensor& mask, torch::Tensor* past_k = nullptr,
                       torch::Tensor* past_v = nullptr) {
    torch::Tensor context;
    {
      LayerScope scope(path);
      if (past_k != nullptr) {
        if (past_k->defined()) {
          k = torch::cat({*past_k, k}, 2);  // [B, H, t + 1, dk]
          v = torch::cat({*past_v, v}, 2);
        }
        *past_k = k;
        *past_v = v;
      }
      const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(3)));
      auto scores = torch::matmul(q * scale, k.transpose(2, 3));  // [B, H, Tq, Tk]
      if (mask.defined()) scores = scores.masked_fill(mask, -1e9);
      auto weights = torch::softmax(scores, 3);      // [B, H, Tq, Tk]
      context = torch::matmul(weights, v);           // [B, H, Tq, dk]
      context = context.transpose(1, 2).flatten(2);  // [B, Tq, D]
      scope.output(context);
    }
    return run_layer(path + ".out_proj", out_proj, context);  // [B, Tq, D]
  }

  int64_t heads;
  nn::Linear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, out_proj{nullptr};
};
TORCH_MODULE(MultiHeadAttention);

struct FeedForwardImpl : nn::Module {
  FeedForwardImpl(int64_t d_model, int64_t ff)
      : linear1(register_module("linear1", nn::Linear(d_model, ff))),
        linear2(register_module("linear2", nn::Linear(ff, d_model))) {}
  // [B, T, D] -> [B, T, D]
  torch::Tensor forward(const std::string& path, const torch::Tensor& x) {
    auto h = run_layer(path + ".linear1", linear1, x);  // [B, T, FF]
    {
      LayerScope scope(path);  // the ReLU counts to the feed-forward block
      h = scope.output(torch::relu(h));
    }
    return run_layer(path + ".linear2", linear2, h);  // [B, T, D]
  }
  nn::Linear linear1, linear2;
};
TORCH_MODULE(FeedForward);

// Post-norm residual: LayerNorm(x + Dropout(y)); the dropout and the residual add are
// attributed to the norm that follows them.
torch::Tensor add_norm(const std::string& path, nn::LayerNorm& norm, const torch::Tensor& x,
                       const torch::Tensor& y, double dropout, bool training) {
  LayerScope scope(path);
  return scope.output(
      norm->forward(x + F::dropout(y, F::DropoutFuncOptions().p(dropout).training(training))));
}

struct EncoderLayerImpl : nn::Module {
  EncoderLayerImpl(int64_t d_model, int64_t ff, int64_t heads)
      : self_attn(register_module("self_attn", MultiHeadAttention(d_model, heads))),
        norm1(register_module("norm1", nn::LayerNorm(nn::LayerNormOptions({d_model})))),
        ff_(register_module("ff", FeedForward(d_model, ff))),
        norm2(register_module("norm2", nn::LayerNorm(nn::LayerNormOptions({d_model})))) {}

  // x: [B, S, D], pad_mask: [B, 1, 1, S] (true at padding)
  torch::Tensor forward(const std::string& path, torch::Tensor x, const torch::Tensor& pad_mask,
                        double dropout) {
    const std::string a = path + ".self_attn";
    auto q = self_attn->split(run_layer(a + ".q_proj", self_attn->q_proj, x));  // [B, H, S, dk]
    auto k = self_attn->split(run_layer(a + ".k_proj", self_attn->k_proj, x));
    auto v = self_attn->split(run_layer(a + ".v_proj", self_attn->v_proj, x));
    x = add_norm(path + ".norm1", norm1, x, self_attn->attend(a, q, k, v, pad_mask), dropout,
                 is_training());
    return add_norm(path + ".norm2", norm2, x, ff_->forward(path + ".ff", x), dropout,
                    is_training());  // [B, S, D]
  }

  MultiHeadAttention self_attn;
  nn::LayerNorm norm1;
  FeedForward ff_;
  nn::LayerNorm norm2;
};
TORCH_MODULE(EncoderLayer);

// Cached keys/values of one decoder layer for incremental decoding.
struct LayerCache {
  torch::Tensor self_k, self_v;    // [N, H, t, dk], grown by one position per step
  torch::Tensor cross_k, cross_v;  // [N, H, S, dk], projected once from the encoder output
};

struct DecoderLayerImpl : nn::Module {
  DecoderLayerImpl(int64_t d_model, int64_t ff, int64_t heads)
      : self_attn(register_module("self_attn", MultiHeadAttention(d_model, heads))),
        norm1(register_module("norm1", nn::LayerNorm(nn::LayerNormOptions({d_model})))),
        cross_attn(register_module("cross_attn", MultiHeadAttention(d_model, heads))),
        norm2(register_module("norm2", nn::LayerNorm(nn::LayerNormOptions({d_model})))),
        ff_(register_module("ff", FeedForward(d_model, ff))),
        norm3(register_module("norm3", nn::LayerNorm(nn::LayerNormOptions({d_model})))) {}

  void project_memory(const std::string& path, const torch::Tensor& memory, LayerCache& cache) {
    const std::string a = path + ".cross_attn";
    cache.cross_k = cross_attn->split(run_layer(a + ".k_proj", cross_attn->k_proj, memory));
    cache.cross_v = cross_attn->split(run_layer(a + ".v_proj", cross_attn->v_proj, memory));
  }

  // x: [B, T, D] (T = 1 when decoding incrementally); self_mask: causal [T, T] or undefined;
  // memory_mask: [B, 1, 1, S]. With `incremental`, this step's keys/values are appended to
  // the cache and attention runs over all cached positions.
  torch::Tensor forward(const std::string& path, torch::Tensor x, const torch::Tensor& self_mask,
                        const torch::Tensor& memory_mask, LayerCache& cache, bool incremental,
                        double dropout) {
    const std::string a = path + ".self_attn", c = path + ".cross_attn";
    auto q = self_attn->split(run_layer(a + ".q_proj", self_attn->q_proj, x));  // [B, H, T, dk]
    auto k = self_attn->split(run_layer(a + ".k_proj", self_attn->k_proj, x));
    auto v = self_attn->split(run_layer(a + ".v_proj", self_attn->v_proj, x));
    auto attended = incremental
                        ? self_attn->attend(a, q, k, v, self_mask, &cache.self_k, &cache.self_v)
                        : self_attn->attend(a, q, k, v, self_mask);
    x = add_norm(path + ".norm1", norm1, x, attended, dropout, is_training());
    auto cq = cross_attn->split(run_layer(c + ".q_proj", cross_attn->q_proj, x));
    x = add_norm(path + ".norm2", norm2, x,
                 cross_attn->attend(c, cq, cache.cross_k, cache.cross_v, memory_mask), dropout,
                 is_training());
    return add_norm(path + ".norm3", norm3, x, ff_->forward(path + ".ff", x), dropout,
                    is_training());  // [B, T, D]
  }

  MultiHeadAttention self_attn;
  nn::LayerNorm norm1;
  MultiHeadAttention cross_attn;
  nn::LayerNorm norm2;
  FeedForward ff_;
  nn::LayerNorm norm3;
};
TORCH_MODULE(DecoderLayer);

struct TransformerImpl : nn::Module {
  explicit TransformerImpl(const Config& c)
      : d_model(c.get_int("d_model")),
        dropout(c.get_double("dropout")),
        embedding(register_module("embedding", nn::Embedding(c.get_int("vocab"), d_model))) {
    const int64_t ff = c.get_int("ff"), heads = c.get_int("heads");
    for (int64_t l = 0; l < c.get_int("encoder_layers"); ++l)
      encoder->push_back(EncoderLayer(d_model, ff, heads));
    for (int64_t l = 0; l < c.get_int("decoder_layers"); ++l)
      decoder->push_back(DecoderLayer(d_model, ff, heads));
    register_module("encoder", encoder);
    register_module("decoder", decoder);
    // tensor2tensor initialises the shared embedding with N(0, d_model^-0.5).
    torch::NoGradGuard no_grad;
    embedding->weight.normal_(0.0, std::pow(static_cast<double>(d_model), -0.5));
    // Sinusoidal encodings (paper section 3.5), long enough for any configured length.
    const int64_t positions = std::max(c.get_int("source_len"), c.get_int("target_len"));
    auto pos = torch::arange(positions, torch::kFloat).unsqueeze(1);  // [P, 1]
    auto i = torch::arange(0, d_model, 2, torch::kFloat);             // [D/2]
    auto angle = pos * torch::exp(i * (-std::log(10000.0) / static_cast<double>(d_model)));
    position_table = register_buffer(
        "position_table",
        torch::stack({torch::sin(angle), torch::cos(angle)}, 2).flatten(1));  // [P, D]
  }

  // Shared embedding scaled by sqrt(d_model) plus positions from `offset`: [B, T] -> [B, T, D]
  torch::Tensor embed(const torch::Tensor& tokens, int64_t offset) {
    auto x = run_layer("embedding", embedding, tokens);
    LayerScope scope("positional_encoding");
    x = x * std::sqrt(static_cast<double>(d_model)) +
        position_table.narrow(0, offset, tokens.size(1));
    return scope.output(F::dropout(x, F::DropoutFuncOptions().p(dropout).training(is_training())));
  }

  // source: [B, S] -> memory [B, S, D]; pad_mask [B, 1, 1, S] true at padding
  torch::Tensor encode(const torch::Tensor& source, const torch::Tensor& pad_mask) {
    auto x = embed(source, 0);
    for (size_t l = 0; l < encoder->size(); ++l)
      x = encoder[l]->as<EncoderLayer>()->forward("encoder." + std::to_string(l), x, pad_mask,
                                                  dropout);
    return x;
  }

  std::vector<LayerCache> project_memory(const torch::Tensor& memory) {
    std::vector<LayerCache> caches(decoder->size());
    for (size_t l = 0; l < decoder->size(); ++l)
      decoder[l]->as<DecoderLayer>()->project_memory("decoder." + std::to_string(l), memory,
                                                     caches[l]);
    return caches;
  }

  // Decoder over `tokens` [B, T] starting at position `offset` -> [B, T, D]
  torch::Tensor decode(const torch::Tensor& tokens, int64_t offset, const torch::Tensor& self_mask,
                       const torch::Tensor& memory_mask, std::vector<LayerCache>& caches,
                       bool incremental) {
    auto x = embed(tokens, offset);
    for (size_t l = 0; l < decoder->size(); ++l)
      x = decoder[l]->as<DecoderLayer>()->forward("decoder." + std::to_string(l), x, self_mask,
                                                  memory_mask, caches[l], incremental, dropout);
    return x;
  }

  // Pre-softmax projection with the shared embedding matrix: [..., D] -> [..., V]
  torch::Tensor logits(const torch::Tensor& x) {
    LayerScope scope("output_projection");
    return scope.output(F::linear(x, embedding->weight));
  }

  int64_t d_model;
  double dropout;
  nn::Embedding embedding;
  nn::ModuleList encoder, decoder;
  torch::Tensor position_table;
};
TORCH_MODULE(Transformer);

class TransformerModel : public BeamDecodedModel {
 public:
  TransformerModel(const Config& c, const torch::Device& device)
      : BeamDecodedModel(c),
        net_(c),
        device_(device),
        length_penalty_(c.get_double("length_penalty")),
        label_smoothing_(c.get_double("label_smoothing")),
        warmup_(c.get_double("warmup_steps")) {
    net_->to(device);
    optimizer_ = std::make_unique<torch::optim::Adam>(
        net_->parameters(), torch::optim::AdamOptions(0.0)
                                .betas({c.get_double("beta1"), c.get_double("beta2")})
                                .eps(c.get_double("eps")));
    word_probs_ = log_uniform_probabilities(c.get_int("vocab") - kTransformerReservedIds, device);
  }

  nn::Module& module() override { return *net_; }

  // tensors: source [B, S], decoder input [B, T] (targets shifted right, PAD first),
  // targets [B, T] (PAD after EOS). Lengths (EOS included) are uniform in [min_len, max]:
  // one length bucket of the batching by approximate length.
  Batch make_batch() override {
    auto source = padded_sentences(
        word_probs_,
        sentence_lengths(batch_, std::min(min_len_, source_len_), source_len_, device_),
        source_len_, kTransformerReservedIds, kTransformerEosId, kPadId);
    auto target = padded_sentences(
        word_probs_,
        sentence_lengths(batch_, std::min(min_len_, target_len_), target_len_, device_),
        target_len_, kTransformerReservedIds, kTransformerEosId, kPadId);
    auto decoder_input = torch::cat(
        {torch::full({batch_, 1}, kPadId, target.options()), target.narrow(1, 0, target_len_ - 1)},
        1);
    // Work unit: target positions of the padded batch (all are computed).
    return {{source, decoder_input, target}, static_cast<double>(batch_ * target_len_)};
  }

  double train_step(const Batch& b) override {
    {
      LayerScope scope("optimizer");
      optimizer_->zero_grad();
      // Learning-rate schedule of section 5.3, evaluated at this step (1-based).
      ++step_;
      const double s = static_cast<double>(step_);
      const double lr = std::pow(static_cast<double>(net_->d_model), -0.5) *
                        std::min(std::pow(s, -0.5), s * std::pow(warmup_, -1.5));
      for (auto& group : optimizer_->param_groups())
        static_cast<torch::optim::AdamOptions&>(group.options()).lr(lr);
    }
    const auto& source = b.tensors[0];
    auto memory_mask = source.eq(kPadId).view({source.size(0), 1, 1, source.size(1)});
    auto memory = net_->encode(source, memory_mask);  // [B, S, D]
    auto caches = net_->project_memory(memory);
    auto causal = torch::ones({target_len_, target_len_},
                              torch::TensorOptions().dtype(torch::kBool).device(device_))
                      .triu(1);  // [T, T] true above the diagonal: future positions
    auto out = net_->decode(b.tensors[1], 0, causal, memory_mask, caches, false);  // [B, T, D]
    auto logits = net_->logits(out);                                               // [B, T, V]
    torch::Tensor loss;
    {
      LayerScope scope("loss");
      loss = scope.output(F::cross_entropy(
          logits.flatten(0, 1), b.tensors[2].flatten(),
          F::CrossEntropyFuncOptions().ignore_index(kPadId).label_smoothing(label_smoothing_)));
    }
    loss.backward();
    {
      LayerScope scope("optimizer");
      optimizer_->step();
    }
    return loss.item<double>();
  }

 private:
  // Beam search (beam 4, length penalty 0.6) over at most target_len positions, stopping early
  // when every hypothesis has ended. Returns the sum of the best normalised scores.
  BeamSearch decode(const Batch& b) override {
    const auto& source = b.tensors[0];
    const int64_t batch = source.size(0);
    auto memory_mask = source.eq(kPadId).view({batch, 1, 1, source.size(1)});
    auto memory = net_->encode(source, memory_mask);  // [B, S, D]
    // Cross-attention keys/values are projected once per sentence, then tiled to the `beam`
    // hypotheses of that sentence (rows b * beam + k), as tensor2tensor's fast decoding does.
    auto caches = net_->project_memory(memory);  // [B, H, S, dk] each
    {
      LayerScope scope("beam_search");
      auto expand = torch::arange(batch, source.options()).repeat_interleave(beam_);  // [B*K]
      memory_mask = memory_mask.index_select(0, expand);  // [B*K, 1, 1, S]
      for (auto& cache : caches) {
        cache.cross_k = cache.cross_k.index_select(0, expand);  // [B*K, H, S, dk]
        cache.cross_v = cache.cross_v.index_select(0, expand);
      }
    }
    BeamSearch search(batch, beam_, kTransformerEosId, LengthNorm::kGnmt, length_penalty_, device_);
    auto tokens = torch::full({batch * beam_, 1}, kPadId, source.options());  // start symbol
    for (int64_t t = 0; t < target_len_; ++t) {
      auto out = net_->decode(tokens, t, {}, memory_mask, caches, true);  // [B*K, 1, D]
      torch::Tensor log_probs;
      {
        LayerScope scope("output_projection");
        log_probs =
            scope.output(torch::log_softmax(F::linear(out.squeeze(1), net_->embedding->weight),
                                            1));  // [B*K, V]
      }
      LayerScope scope("beam_search");
      auto rows = search.step(log_probs);
      for (auto& cache : caches) {  // hypotheses continue from the rows they extend
        cache.self_k = cache.self_k.index_select(0, rows);
        cache.self_v = cache.self_v.index_select(0, rows);
      }
      tokens = search.tokens().unsqueeze(1);
      if (search.done()) break;
    }
    return search;
  }

  Transformer net_;
  torch::Device device_;
  double length_penalty_, label_smoothing_, warmup_;
  int64_t step_ = 0;
  std::unique_ptr<torch::optim::Adam> optimizer_;
  torch::Tensor word_probs_;
};

}  // namespace

Workload make_transformer() {
  Workload w;
  w.info.name = "transformer";
  w.info.suites = {"tbd", "paradnn-real"};
  w.info.domain = "machine translation";
  w.info.description =
      "Transformer base: 6+6 post-norm layers, d_model 512, ff 2048, 8 heads, shared 37k BPE "
      "vocabulary and embeddings, label smoothing 0.1, Adam with warm-up; beam 4 (alpha 0.6) "
      "with cached keys/values in inference; 832 sentences x 32 tokens";
  w.info.source =
      "Vaswani et al., Attention Is All You Need, NIPS 2017 (base model, WMT14 En-De: Table 3, "
      "sections 3, 5.3, 5.4, 6.1); vocabulary 37,000 as TBD (Zhu et al. 2018)";
  w.info.throughput_unit = "tokens/s";
  w.info.small_batch = 4;
  w.info.tiny_config = {"batch=2",      "vocab=64",         "d_model=16",       "ff=32",
                        "heads=2",      "encoder_layers=2", "decoder_layers=2", "source_len=7",
                        "target_len=6", "min_len=4",        "warmup_steps=16"};
  w.default_config = [] {
    Config c;
    c.add_int("batch", 832,
              "sentence pairs per batch: 832 x ~30 real tokens ~ 25,000 source and 25,000 "
              "target tokens (paper section 5.1)");
    c.add_int("vocab", 37000, "shared source/target BPE vocabulary (paper and TBD: 37,000)",
              kTransformerReservedIds + 1);
    c.add_int("d_model", 512, "model width (paper: 512, base)");
    c.add_int("ff", 2048, "inner feed-forward width (paper: 2048)");
    c.add_int("heads", 8, "attention heads (paper: 8, d_k = d_v = 64)");
    c.add_int("encoder_layers", 6, "encoder layers (paper: N = 6)");
    c.add_int("decoder_layers", 6, "decoder layers (paper: N = 6)");
    c.add_double("dropout", 0.1, "residual and embedding dropout (paper: P_drop = 0.1)");
    c.add_double("label_smoothing", 0.1, "label smoothing (paper: 0.1)");
    c.add_int("source_len", 32,
              "source positions: a length bucket of BPE sentences near WMT14's mean (~30)", 2);
    c.add_int("target_len", 32, "target positions (EOS included), as source_len", 2);
    c.add_int("min_len", 28,
              "shortest sentence in the bucket (lengths uniform in [min_len, max]: batching "
              "by approximate length)");
    c.add_double("beta1", 0.9, "Adam beta1 (paper: 0.9)");
    c.add_double("beta2", 0.98, "Adam beta2 (paper: 0.98)");
    c.add_double("eps", 1e-9, "Adam epsilon (paper: 1e-9)");
    c.add_double("warmup_steps", 4000, "learning-rate warm-up steps (paper: 4000)", 1);
    c.add_int("beam", 4, "beam width in inference (paper: 4)");
    c.add_double("length_penalty", 0.6, "GNMT length penalty alpha (paper: 0.6)");
    return c;
  };
  w.build = [](const Config& c, const torch::Device& device) -> std::unique_ptr<Model> {
    if (c.get_int("d_model") % c.get_int("heads") != 0 || c.get_int("d_model") % 2 != 0)
      throw std::invalid_argument("transformer: d_model must be even and divisible by heads");
    return std::make_unique<TransformerModel>(c, device);
  };
  return w;
}

}  // namespace plumb::workloads
