// seq2seq_gru: the GRU encoder-decoder translation model of the Facebook data-centre inference
// study (Park et al. 2018, Table 1 "seq2seq (GRU/LSTM)", section 2.1.3: encoder and decoder
// of gated recurrent units, output generated with beam search). The study names no sizes, so
// plumb takes the GRU attention model it builds on, RNNsearch-50 of Bahdanau, Cho and Bengio
// (Neural Machine Translation by Jointly Learning to Align and Translate, ICLR 2015,
// appendices A and B; WMT14 En-Fr):
//   - 30,000-word source and target shortlists, word embeddings m = 620;
//   - encoder: bidirectional GRU, n = 1000 units per direction; annotations h_j = [fw; bw];
//   - decoder: GRU of 1000 units fed [E y_{i-1}; c_i], initial state s_0 = tanh(W_s bw_1);
//   - attention (alignment model): e_ij = v_a^T tanh(W_a s_{i-1} + U_a h_j), n' = 1000;
//   - deep output: t~ = U_o s_{i-1} + V_o E y_{i-1} + C_o c_i (2l = 1000), maxout over pairs
//     (l = 500), then W_o t -> 30,000 logits;
//   - training with teacher forcing and cross-entropy (summed over a sentence's tokens, mean
//     over sentences), Adadelta (rho 0.95, eps 1e-6), gradient norm clipped at 1, batch 80,
//     sentences of up to 50 words;
//   - inference: beam search, beam 5 (GroundHog's sampler default; neither paper states one),
//     scores normalised by length, stopping at EOS or 50 tokens.
// GRUs carry one bias vector (as Theano/GroundHog's); torch's gru_cell applies the reset gate
// after U_h (Bahdanau: before), which changes neither parameters nor MACs.
// Trainable parameters: 80,443,000 (derivation in docs/workloads.md).
#include "plumb/workloads/inference/seq2seq_gru.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "plumb/core/layer_scope.h"
#include "plumb/workloads/common/beam_search.h"
#include "plumb/workloads/common/clipped_update.h"
#include "plumb/workloads/common/model_builder.h"
#include "plumb/workloads/common/synthetic_data.h"
#include "plumb/workloads/common/token_data.h"

namespace plumb::workloads {
namespace {

namespace nn = torch::nn;
namespace F = torch::nn::functional;

constexpr int64_t kGruEosId = 0;  // GroundHog: 0 end of sentence (also the padding), 1 UNK
constexpr int64_t kGruReservedIds = 2;

// One GRU with a single 3n bias (Theano/GroundHog); gates in torch's r, z, n order.
struct GruImpl : nn::Module {
  GruImpl(int64_t input, int64_t hidden) {
    w_ih = register_parameter("weight_ih", torch::empty({3 * hidden, input}).normal_(0, 0.01));
    w_hh = register_parameter("weight_hh", torch::empty({3 * hidden, hidden}));
    bias = register_parameter("bias", torch::zeros({3 * hidden}));
    torch::NoGradGuard no_grad;
    for (int64_t g = 0; g < 3; ++g)  // recurrent matrices orthogonal (appendix B.1)
      nn::init::orthogonal_(w_hh.narrow(0, g * hidden, hidden));
  }
  // x: [N, input], h: [N, H] -> [N, H]
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& h) {
    return torch::gru_cell(x, h, w_ih, w_hh, bias, {});
  }
  torch::Tensor w_ih, w_hh, bias;
};
TORCH_MODULE(Gru);

nn::Linear linear(int64_t in, int64_t out, bool bias, double std) {
  nn::Linear l(nn::LinearOptions(in, out).bias(bias));
  torch::NoGradGuard no_grad;
  l->weight.normal_(0, std);
  if (bias) l->bias.zero_();
  return l;
}

struct RnnSearchAttentionImpl : nn::Module {
  RnnSearchAttentionImpl(int64_t state, int64_t memory, int64_t size)
      : query_proj(register_module("query_proj", linear(state, size, false, 0.001))),
        memory_proj(register_module("memory_proj", linear(memory, size, true, 0.001))) {
    v = register_parameter("v", torch::zeros({size}));
  }
  nn::Linear query_proj, memory_proj;  // W_a, U_a
  torch::Tensor v;                     // v_a
};
TORCH_MODULE(RnnSearchAttention);

struct DeepOutputImpl : nn::Module {
  DeepOutputImpl(int64_t state, int64_t embedding, int64_t context, int64_t maxout)
      : state_proj(register_module("state_proj", linear(state, 2 * maxout, true, 0.01))),
        embedding_proj(
            register_module("embedding_proj", linear(embedding, 2 * maxout, false, 0.01))),
        context_proj(register_module("context_proj", linear(context, 2 * maxout, false, 0.01))) {}
  nn::Linear state_proj, embedding_proj, context_proj;  // U_o, V_o, C_o
};
TORCH_MODULE(DeepOutput);

struct Encoded {
  torch::Tensor annotations;  // [N, S, 2n]
  torch::Tensor keys;         // [N, S, n'] U_a h_j, computed once
  torch::Tensor pad;          // [N, S] true at padding
  torch::Tensor state;        // [N, n] s_0
};

struct RnnSearchImpl : nn::Module {
  explicit RnnSearchImpl(const Config& c)
      : hidden(c.get_int("hidden")),
        embedding(c.get_int("embedding")),
        encoder_embedding(register_module("encoder_embedding",
                                          nn::Embedding(c.get_int("source_vocab"), embedding))),
        encoder_fw(register_module("encoder_fw", Gru(embedding, hidden))),
        encoder_bw(register_module("encoder_bw", Gru(embedding, hidden))),
        init_state(register_module("init_state", linear(hidden, hidden, true, 0.01))),
        decoder_embedding(register_module("decoder_embedding",
                                          nn::Embedding(c.get_int("target_vocab"), embedding))),
        attention(register_module("attention",
                                  RnnSearchAttention(hidden, 2 * hidden, c.get_int("alignment")))),
        decoder_gru(register_module("decoder_gru", Gru(embedding + 2 * hidden, hidden))),
        deep_output(register_module(
            "deep_output", DeepOutput(hidden, embedding, 2 * hidden, c.get_int("maxout")))),
        output_projection(
            register_module("output_projection",
                            linear(c.get_int("maxout"), c.get_int("target_vocab"), true, 0.01))) {
    torch::NoGradGuard no_grad;
    encoder_embedding->weight.normal_(0, 0.01);
    decoder_embedding->weight.normal_(0, 0.01);
  }

  // One direction over [B, S, E] with the state held at padding. Returns states [B, S, n]
  // and the state after the last step processed.
  std::pair<torch::Tensor, torch::Tensor> run_direction(const std::string& name, Gru& cell,
                                                        const torch::Tensor& x,
                                                        const torch::Tensor& real, bool reverse) {
    const int64_t steps = x.size(1);
    auto h = torch::zeros({x.size(0), hidden}, x.options());
    std::vector<torch::Tensor> states(steps);
    for (int64_t i = 0; i < steps; ++i) {
      const int64_t t = reverse ? steps - 1 - i : i;
      LayerScope scope(name);
      auto h_new = cell->forward(x.select(1, t), h);
      h = torch::where(real.select(1, t).unsqueeze(1), h_new, h);
      states[t] = scope.output(h);  // [B, n]
    }
    return {torch::stack(states, 1), h};
  }

  // source: [B, S], source_real: [B, S] bool
  Encoded encode(const torch::Tensor& source, const torch::Tensor& source_real) {
    auto x = run_layer("encoder_embedding", encoder_embedding, source);  // [B, S, m]
    auto fw = run_direction("encoder_fw", encoder_fw, x, source_real, false).first;
    auto [bw, bw_first] = run_direction("encoder_bw", encoder_bw, x, source_real, true);
    Encoded enc;
    {
      LayerScope scope("encoder_concat");
      enc.annotations = scope.output(torch::cat({fw, bw}, 2));  // [B, S, 2n]
    }
    enc.keys = run_layer("attention.memory_proj", attention->memory_proj, enc.annotations);
    enc.pad = source_real.logical_not();
    // s_0 = tanh(W_s h_1-backward): one evaluation of the init_state layer, its tanh
    // included (a second scope would count the layer, and read its weights, twice).
    LayerScope scope("init_state");
    enc.state = scope.output(torch::tanh(init_state->forward(bw_first)));  // [B, n]
    return enc;
  }

  // One decoder step from state s_{i-1} [N, n] and previous word embedding [N, m]:
  // returns the maxout output t_i [N, l] and advances `state` to s_i.
  torch::Tensor decode_step(const Encoded& enc, const torch::Tensor& prev, torch::Tensor& state) {
    auto query = run_layer("attention.query_proj", attention->query_proj, state);  // [N, n']
    torch::Tensor context;
    {
      LayerScope scope("attention");
      auto energy = torch::tanh(enc.keys + query.unsqueeze(1));                      // [N, S, n']
      auto scores = torch::matmul(energy, attention->v).masked_fill(enc.pad, -1e9);  // [N, S]
      auto weights = torch::softmax(scores, 1);
      context = scope.output(torch::bmm(weights.unsqueeze(1), enc.annotations).squeeze(1));
    }  // context: [N, 2n]
    // The deep output reads s_{i-1} (appendix A.2.2), so it is formed before the update.
    auto pre = run_layer("deep_output.state_proj", deep_output->state_proj, state) +
               run_layer("deep_output.embedding_proj", deep_output->embedding_proj, prev) +
               run_layer("deep_output.context_proj", deep_output->context_proj, context);
    torch::Tensor out;
    {
      LayerScope scope("deep_output");  // maxout over pairs: [N, 2l] -> [N, l]
      out = scope.output(std::get<0>(pre.view({pre.size(0), -1, 2}).max(2)));
    }
    LayerScope scope("decoder_gru");
    state = scope.output(decoder_gru->forward(torch::cat({prev, context}, 1), state));  // [N, n]
    return out;
  }

  int64_t hidden, embedding;
  nn::Embedding encoder_embedding;
  Gru encoder_fw, encoder_bw;
  nn::Linear init_state;
  nn::Embedding decoder_embedding;
  RnnSearchAttention attention;
  Gru decoder_gru;
  DeepOutput deep_output;
  nn::Linear output_projection;
};
TORCH_MODULE(RnnSearch);

// Adadelta (Zeiler 2012), the optimiser of the paper; LibTorch 1.13 has none.
class Adadelta {
 public:
  Adadelta(std::vector<torch::Tensor> params, double rho, double eps)
      : params_(std::move(params)), rho_(rho), eps_(eps) {
    for (const auto& p : params_) {
      square_grad_.push_back(torch::zeros_like(p));
      square_delta_.push_back(torch::zeros_like(p));
    }
  }
  void zero_grad() {
    for (auto& p : params_)
      if (p.grad().defined()) p.grad().zero_();
  }
  void step() {
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < params_.size(); ++i) {
      const auto& g = params_[i].grad();
      if (!g.defined()) continue;
      square_grad_[i].mul_(rho_).addcmul_(g, g, 1 - rho_);
      auto delta = (square_delta_[i] + eps_).sqrt_().div_((square_grad_[i] + eps_).sqrt_()).mul_(g);
      square_delta_[i].mul_(rho_).addcmul_(delta, delta, 1 - rho_);
      params_[i].sub_(delta);
    }
  }

 private:
  std::vector<torch::Tensor> params_, square_grad_, square_delta_;
  double rho_, eps_;
};

class RnnSearchModel : public BeamDecodedModel {
 public:
  RnnSearchModel(const Config& c, const torch::Device& device)
      : BeamDecodedModel(c),
        net_(c),
        device_(device),
        max_grad_norm_(c.get_double("max_grad_norm")) {
    net_->to(device);
    {
      // Adadelta's running averages are allocated here; under this scope the memory profiler
      // files them as optimizer state.
      LayerScope scope("optimizer");
      optimizer_ =
          std::make_unique<Adadelta>(net_->parameters(), c.get_double("rho"), c.get_double("eps"));
    }
    source_probs_ = log_uniform_probabilities(c.get_int("source_vocab") - kGruReservedIds, device);
    target_probs_ = log_uniform_probabilities(c.get_int("target_vocab") - kGruReservedIds, device);
  }

  nn::Module& module() override { return *net_; }

  // tensors: source [B, S] (words + EOS, EOS-padded), source_real [B, S] bool, targets [B, T]
  // (words + EOS), target_real [B, T] bool. Lengths (EOS included) uniform in
  // [min_len, max]: GroundHog sorts 20 mini-batches by length, so a batch spans a band.
  Batch make_batch() override { return batch_of(batch_); }
  std::optional<Batch> make_batch_of(int64_t examples) override { return batch_of(examples); }

  // Sentences B = `examples`.
  Batch batch_of(int64_t examples) {
    auto source_lengths =
        sentence_lengths(examples, std::min(min_len_, source_len_), source_len_, device_);
    auto target_lengths =
        sentence_lengths(examples, std::min(min_len_, target_len_), target_len_, device_);
    auto source = padded_sentences(source_probs_, source_lengths, source_len_, kGruReservedIds,
                                   kGruEosId, kGruEosId);
    auto target = padded_sentences(target_probs_, target_lengths, target_len_, kGruReservedIds,
                                   kGruEosId, kGruEosId);
    // Work unit: target positions of the padded batch (the decoder computes them all).
    return {{source, length_mask(source_lengths, source_len_), target,
             length_mask(target_lengths, target_len_)},
            static_cast<double>(examples * target_len_)};
  }

  // Teacher forcing: the decoder reads the reference's previous word (a zero embedding first).
  double train_step(const Batch& b) override {
    {
      LayerScope scope("optimizer");
      optimizer_->zero_grad();
    }
    const auto& target = b.tensors[2];
    auto enc = net_->encode(b.tensors[0], b.tensors[1]);
    auto embedded = run_layer("decoder_embedding", net_->decoder_embedding, target);  // [B, T, m]
    auto state = enc.state;
    auto prev = torch::zeros({target.size(0), net_->embedding}, embedded.options());
    std::vector<torch::Tensor> outputs;
    for (int64_t t = 0; t < target_len_; ++t) {
      outputs.push_back(net_->decode_step(enc, prev, state));  // [B, l]
      prev = embedded.select(1, t);
    }
    auto logits = run_layer("output_projection", net_->output_projection,
                            torch::stack(outputs, 1));  // [B, T, V]
    torch::Tensor loss;
    {
      LayerScope scope("loss");
      auto token_loss = F::cross_entropy(logits.flatten(0, 1), target.flatten(),
                                         F::CrossEntropyFuncOptions().reduction(torch::kNone));
      auto weights = b.tensors[3].flatten().to(token_loss.dtype());
      loss = scope.output((token_loss * weights).sum() / static_cast<double>(target.size(0)));
    }
    loss.backward();
    clipped_update(*optimizer_, net_->parameters(), max_grad_norm_);
    return loss.item<double>();
  }

 private:
  // Beam search: the encoder runs once per sentence, its annotations and keys are tiled to
  // the beam; at most target_len steps, stopping when every hypothesis has emitted EOS.
  BeamSearch decode(const Batch& b) override {
    const int64_t batch = b.tensors[0].size(0);
    auto enc = net_->encode(b.tensors[0], b.tensors[1]);
    {
      LayerScope scope("beam_search");
      auto expand = torch::arange(batch, b.tensors[0].options()).repeat_interleave(beam_);
      enc.annotations = enc.annotations.index_select(0, expand);  // [B*K, S, 2n]
      enc.keys = enc.keys.index_select(0, expand);                // [B*K, S, n']
      enc.pad = enc.pad.index_select(0, expand);
      enc.state = enc.state.index_select(0, expand);  // [B*K, n]
    }
    BeamSearch search(batch, beam_, kGruEosId, LengthNorm::kPower, 1.0, device_);
    auto state = enc.state;
    auto prev = torch::zeros({batch * beam_, net_->embedding}, state.options());
    for (int64_t t = 0; t < target_len_; ++t) {
      auto out = net_->decode_step(enc, prev, state);  // [B*K, l]
      torch::Tensor log_probs;
      {
        LayerScope scope("output_projection");
        log_probs = scope.output(torch::log_softmax(net_->output_projection->forward(out), 1));
      }
      torch::Tensor rows;
      {
        LayerScope scope("beam_search");
        rows = search.step(log_probs);
        state = state.index_select(0, rows);
      }
      if (search.done()) break;
      prev = run_layer("decoder_embedding", net_->decoder_embedding, search.tokens());
    }
    return search;
  }

  RnnSearch net_;
  torch::Device device_;
  double max_grad_norm_;
  std::unique_ptr<Adadelta> optimizer_;
  torch::Tensor source_probs_, target_probs_;
};

}  // namespace

Workload make_seq2seq_gru() {
  Workload w;
  w.info.name = "seq2seq_gru";
  w.info.suites = {"inference"};
  w.info.domain = "machine translation";
  w.info.description =
      "GRU encoder-decoder with attention (RNNsearch-50): bidirectional 1000-unit GRU encoder, "
      "1000-unit GRU decoder, 620-d embeddings, 30k vocabularies, maxout deep output; beam 5 "
      "with length normalisation in inference; Adadelta, batch 80, up to 50 tokens";
  w.info.source =
      "Park et al. 2018, Deep Learning Inference in Facebook Data Centers (Table 1, sec. 2.1.3: "
      "GRU seq2seq, beam search); sizes and training from Bahdanau et al., ICLR 2015 "
      "(RNNsearch-50, appendices A-B)";
  w.info.throughput_unit = "tokens/s";
  w.info.small_batch = 4;
  w.info.tiny_config = {"batch=3",      "source_vocab=40", "target_vocab=30", "embedding=8",
                        "hidden=8",     "alignment=8",     "maxout=4",        "source_len=6",
                        "target_len=5", "min_len=3",       "beam=3"};
  w.default_config = [] {
    Config c;
    c.add_int("batch", 80, "sentence pairs per batch (Bahdanau: 80)");
    c.add_int("source_vocab", 30000, "source shortlist incl. EOS and UNK (Bahdanau: 30,000)",
              kGruReservedIds + 1);
    c.add_int("target_vocab", 30000, "target shortlist incl. EOS and UNK (Bahdanau: 30,000)",
              kGruReservedIds + 1);
    c.add_int("embedding", 620, "word embedding size m (Bahdanau: 620)");
    c.add_int("hidden", 1000, "GRU units n, per encoder direction and in the decoder (1000)");
    c.add_int("alignment", 1000, "alignment model hidden size n' (Bahdanau: 1000)");
    c.add_int("maxout", 500, "deep output maxout units l (Bahdanau: 500)");
    c.add_int("source_len", 50, "source positions incl. EOS (RNNsearch-50: up to 50 words)", 2);
    c.add_int("target_len", 50, "target positions incl. EOS; also the beam's length limit", 2);
    c.add_int("min_len", 25, "shortest sentence of the batch's length band (half the maximum)");
    c.add_double("rho", 0.95, "Adadelta decay (Bahdanau: 0.95)");
    c.add_double("eps", 1e-6, "Adadelta epsilon (Bahdanau: 1e-6)");
    c.add_double("max_grad_norm", 1.0, "gradient L2-norm limit (Bahdanau: 1)");
    c.add_int("beam", 5, "beam width in inference (GroundHog default; papers state none)");
    return c;
  };
  w.build = build_model<RnnSearchModel>;
  return w;
}

}  // namespace plumb::workloads
