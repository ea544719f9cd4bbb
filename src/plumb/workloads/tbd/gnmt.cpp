// gnmt: TBD's LSTM translation model (Zhu et al., TBD, IISWC 2018: "NMT", TensorFlow's nmt
// tutorial code; IWSLT15 English -> Vietnamese, source vocabulary 17,188 words), configured
// as that code's published IWSLT15 settings (nmt/standard_hparams/iwslt15.json, the model of
// the tutorial's IWSLT En-Vi benchmark table):
//   - vocabularies of 17,191 English and 7,709 Vietnamese entries (17,188 / 7,706 words plus
//     <unk>, <s>, </s>), embeddings of 512;
//   - encoder: one bidirectional LSTM layer, 512 units per direction (encoder_type "bi" with
//     num_layers 2 = one forward + one backward layer); outputs concatenated (1024);
//   - decoder: 2 LSTM layers of 512 units started from the encoder's final forward / backward
//     states (pass_hidden_state), wrapped by TensorFlow's AttentionWrapper: the previous
//     attention vector is concatenated to the input embedding; scaled Luong attention (score
//     g * h_t . W_m h_s, W_m a bias-free 1024 -> 512 memory layer, g a learned scalar); the
//     attention vector W_c [h_t; c_t] (1536 -> 512, no bias) is the output;
//   - every LSTM is TensorFlow's BasicLSTMCell (one 4H bias, forget bias 1), inputs dropped
//     with probability 0.2; residual connections off; all weights uniform in [-0.1, 0.1];
//   - a bias-free 512 -> 7,709 output projection; loss: cross-entropy summed over the real
//     target tokens and divided by the batch size; SGD with learning rate 1.0, global
//     gradient-norm clipping at 5; batch 128 (TBD's largest TensorFlow batch);
//   - inference: beam search with beam 10 and GNMT length penalty 1.0 (iwslt15.json).
// Trainable parameters: 27,451,905 (derivation in docs/workloads.md). Embedding gradients are
// sparse, as TensorFlow's IndexedSlices.
#include "plumb/workloads/tbd/gnmt.h"

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

constexpr int64_t kSosId = 1;      // nmt vocabularies start with <unk>, <s>, </s>; sentences are
constexpr int64_t kGnmtEosId = 2;  // padded with </s> and masked by their lengths
constexpr int64_t kGnmtReservedIds = 3;

// One LSTM layer with a single bias vector (TensorFlow BasicLSTMCell parameterisation).
struct LstmLayerImpl : nn::Module {
  LstmLayerImpl(int64_t input, int64_t hidden) {
    w_ih = register_parameter("weight_ih", torch::empty({4 * hidden, input}));
    w_hh = register_parameter("weight_hh", torch::empty({4 * hidden, hidden}));
    bias = register_parameter("bias", torch::zeros({4 * hidden}));
    // BasicLSTMCell adds a forget bias of 1.0 to the f gate (slice 1 in torch's i, f, g, o).
    torch::NoGradGuard no_grad;
    bias.narrow(0, hidden, hidden).fill_(1.0);
  }
  // x: [B, input], h/c: [B, H] -> (h', c')
  std::tuple<torch::Tensor, torch::Tensor> forward(const torch::Tensor& x, const torch::Tensor& h,
                                                   const torch::Tensor& c) {
    return torch::lstm_cell(x, {h, c}, w_ih, w_hh, bias, {});
  }
  torch::Tensor w_ih, w_hh, bias;
};
TORCH_MODULE(LstmLayer);

struct LuongAttentionImpl : nn::Module {
  LuongAttentionImpl(int64_t memory, int64_t units)
      : memory_layer(register_module("memory_layer",
                                     nn::Linear(nn::LinearOptions(memory, units).bias(false)))),
        attention_layer(register_module(
            "attention_layer", nn::Linear(nn::LinearOptions(units + memory, units).bias(false)))) {
    g = register_parameter("g", torch::ones({1}));  // scale=True: g starts at 1
  }
  nn::Linear memory_layer, attention_layer;
  torch::Tensor g;
};
TORCH_MODULE(LuongAttention);

struct Encoded {
  torch::Tensor memory;  // [N, S, 2H] concatenated forward/backward outputs (0 at padding)
  torch::Tensor keys;    // [N, S, H] memory_layer(memory)
  torch::Tensor pad;     // [N, S] true at padding
};

struct DecoderState {
  std::vector<torch::Tensor> h, c;  // per decoder layer, [N, H]
  torch::Tensor attention;          // [N, H] previous attention vector
};

struct NmtImpl : nn::Module {
  explicit NmtImpl(const Config& c)
      : hidden(c.get_int("hidden")),
        dropout(c.get_double("dropout")),
        encoder_embedding(register_module(
            "encoder_embedding",
            nn::Embedding(nn::EmbeddingOptions(c.get_int("source_vocab"), c.get_int("embedding"))
                              .sparse(true)))),
        encoder_fw(register_module("encoder_fw", LstmLayer(c.get_int("embedding"), hidden))),
        encoder_bw(register_module("encoder_bw", LstmLayer(c.get_int("embedding"), hidden))),
        decoder_embedding(register_module(
            "decoder_embedding",
            nn::Embedding(nn::EmbeddingOptions(c.get_int("target_vocab"), c.get_int("embedding"))
                              .sparse(true)))),
        attention(register_module("attention", LuongAttention(2 * hidden, hidden))),
        output_projection(register_module(
            "output_projection",
            nn::Linear(nn::LinearOptions(hidden, c.get_int("target_vocab")).bias(false)))) {
    for (int64_t l = 0; l < c.get_int("decoder_layers"); ++l)
      decoder->push_back(LstmLayer(l == 0 ? c.get_int("embedding") + hidden : hidden, hidden));
    register_module("decoder", decoder);
    torch::NoGradGuard no_grad;
    for (auto& p : parameters()) {
      if (p.numel() > 1) p.uniform_(-0.1, 0.1);  // init_weight 0.1; biases and g keep theirs
    }
  }

  torch::Tensor drop(const torch::Tensor& x) {
    return F::dropout(x, F::DropoutFuncOptions().p(dropout).training(is_training()));
  }

  // One direction over [B, S, E]; state is held (and outputs are 0) at padded positions, as
  // dynamic_rnn with sequence lengths. Returns outputs [B, S, H] and the final (h, c).
  std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> run_direction(const std::string& name,
                                                                        LstmLayer& cell,
                                                                        const torch::Tensor& x,
                                                                        const torch::Tensor& real,
                                                                        bool reverse) {
    const int64_t batch = x.size(0), steps = x.size(1);
    auto h = torch::zeros({batch, hidden}, x.options()), c = h;
    std::vector<torch::Tensor> outputs(steps);
    for (int64_t i = 0; i < steps; ++i) {
      const int64_t t = reverse ? steps - 1 - i : i;
      LayerScope scope(name);
      auto [h_new, c_new] = cell->forward(x.select(1, t), h, c);
      auto m = real.select(1, t).unsqueeze(1);  // [B, 1]
      h = torch::where(m, h_new, h);
      c = torch::where(m, c_new, c);
      outputs[t] = scope.output(h_new * m);  // [B, H]
    }
    return {torch::stack(outputs, 1), h, c};
  }

  // source: [B, S], source_real: [B, S] bool -> memory, keys; fills the decoder's first state.
  Encoded encode(const torch::Tensor& source, const torch::Tensor& source_real,
                 DecoderState& state) {
    torch::Tensor embedded;
    {
      auto e = run_layer("encoder_embedding", encoder_embedding, source);  // [B, S, E]
      LayerScope scope("encoder_dropout");  // input dropout of both encoder cells
      embedded = scope.output(drop(e));
    }
    auto [fw, fw_h, fw_c] = run_direction("encoder_fw", encoder_fw, embedded, source_real, false);
    auto [bw, bw_h, bw_c] = run_direction("encoder_bw", encoder_bw, embedded, source_real, true);
    Encoded enc;
    {
      LayerScope scope("encoder_concat");
      enc.memory = scope.output(torch::cat({fw, bw}, 2));  // [B, S, 2H]
    }
    enc.pad = source_real.logical_not();
    // pass_hidden_state: decoder layer 0 starts from the forward state, layer 1 from the
    // backward state (deeper decoders start their extra layers from zeros).
    state.h.assign(decoder->size(), torch::zeros_like(fw_h));
    state.c.assign(decoder->size(), torch::zeros_like(fw_c));
    state.h[0] = fw_h;
    state.c[0] = fw_c;
    if (decoder->size() > 1) {
      state.h[1] = bw_h;
      state.c[1] = bw_c;
    }
    state.attention = torch::zeros_like(fw_h);
    return enc;
  }

  void project_keys(Encoded& enc) {
    enc.keys = run_layer("attention.memory_layer", attention->memory_layer, enc.memory);
  }

  // One decoder step: input embedding [N, E] -> attention vector [N, H] (the cell output).
  torch::Tensor decode_step(const Encoded& enc, const torch::Tensor& input, DecoderState& state) {
    auto x = torch::cat({input, state.attention}, 1);  // [N, E + H]
    for (size_t l = 0; l < decoder->size(); ++l) {
      LayerScope scope("decoder." + std::to_string(l));
      std::tie(state.h[l], state.c[l]) =
          decoder[l]->as<LstmLayer>()->forward(drop(x), state.h[l], state.c[l]);
      x = scope.output(state.h[l]);  // [N, H]
    }
    torch::Tensor context;
    {
      LayerScope scope("attention");
      auto scores = torch::bmm(enc.keys, x.unsqueeze(2)).squeeze(2) * attention->g;  // [N, S]
      scores = scores.masked_fill(enc.pad, -1e9);
      auto weights = torch::softmax(scores, 1);                                         // [N, S]
      context = scope.output(torch::bmm(weights.unsqueeze(1), enc.memory).squeeze(1));  // [N, 2H]
    }
    state.attention = run_layer("attention.attention_layer", attention->attention_layer,
                                torch::cat({x, context}, 1));  // [N, H]
    return state.attention;
  }

  int64_t hidden;
  double dropout;
  nn::Embedding encoder_embedding;
  LstmLayer encoder_fw, encoder_bw;
  nn::Embedding decoder_embedding;
  nn::ModuleList decoder;
  LuongAttention attention;
  nn::Linear output_projection;
};
TORCH_MODULE(Nmt);

class NmtModel : public BeamDecodedModel {
 public:
  NmtModel(const Config& c, const torch::Device& device)
      : BeamDecodedModel(c),
        net_(c),
        device_(device),
        length_penalty_(c.get_double("length_penalty")),
        max_grad_norm_(c.get_double("max_grad_norm")) {
    net_->to(device);
    optimizer_ = std::make_unique<torch::optim::SGD>(net_->parameters(),
                                                     torch::optim::SGDOptions(c.get_double("lr")));
    source_probs_ = log_uniform_probabilities(c.get_int("source_vocab") - kGnmtReservedIds, device);
    target_probs_ = log_uniform_probabilities(c.get_int("target_vocab") - kGnmtReservedIds, device);
  }

  nn::Module& module() override { return *net_; }

  // tensors: source [B, S] (words, </s>-padded), source_real [B, S] bool, decoder input [B, T]
  // (<s> + words), targets [B, T] (words + </s>), target_real [B, T] bool. Sentences have
  // min_len..source_len words (uniform: one length bucket of the nmt iterator).
  Batch make_batch() override {
    auto source_lengths =
        sentence_lengths(batch_, std::min(min_len_, source_len_), source_len_, device_);
    auto source_real = length_mask(source_lengths, source_len_);
    auto source =
        torch::where(source_real, zipf_tokens(source_probs_, batch_, source_len_, kGnmtReservedIds),
                     torch::full({batch_, source_len_}, kGnmtEosId, source_lengths.options()));
    // Targets count their </s>: lengths up to target_len.
    auto target_lengths =
        sentence_lengths(batch_, std::min(min_len_ + 1, target_len_), target_len_, device_);
    auto target = padded_sentences(target_probs_, target_lengths, target_len_, kGnmtReservedIds,
                                   kGnmtEosId, kGnmtEosId);
    auto decoder_input = torch::cat(
        {torch::full({batch_, 1}, kSosId, target.options()), target.narrow(1, 0, target_len_ - 1)},
        1);
    // Work unit: target positions of the padded batch (the decoder computes them all).
    return {{source, source_real, decoder_input, target, length_mask(target_lengths, target_len_)},
            static_cast<double>(batch_ * target_len_)};
  }

  double train_step(const Batch& b) override {
    {
      LayerScope scope("optimizer");
      optimizer_->zero_grad();
    }
    DecoderState state;
    auto enc = net_->encode(b.tensors[0], b.tensors[1], state);
    net_->project_keys(enc);
    auto embedded = run_layer("decoder_embedding", net_->decoder_embedding, b.tensors[2]);
    std::vector<torch::Tensor> outputs;
    for (int64_t t = 0; t < target_len_; ++t)
      outputs.push_back(net_->decode_step(enc, embedded.select(1, t), state));  // [B, H]
    auto logits = run_layer("output_projection", net_->output_projection,
                            torch::stack(outputs, 1));  // [B, T, V]
    torch::Tensor loss;
    {
      LayerScope scope("loss");
      auto token_loss = F::cross_entropy(logits.flatten(0, 1), b.tensors[3].flatten(),
                                         F::CrossEntropyFuncOptions().reduction(torch::kNone));
      auto weights = b.tensors[4].flatten().to(token_loss.dtype());
      loss = scope.output((token_loss * weights).sum() / static_cast<double>(batch_));
    }
    loss.backward();
    clipped_update(*optimizer_, net_->parameters(), max_grad_norm_);
    return loss.item<double>();
  }

 private:
  // Beam search (beam 10, length penalty 1.0) over at most target_len steps. As the nmt code,
  // the encoder output and state are tiled to the beam before the attention's memory layer.
  BeamSearch decode(const Batch& b) override {
    const int64_t batch = b.tensors[0].size(0);
    DecoderState state;
    auto enc = net_->encode(b.tensors[0], b.tensors[1], state);
    {
      LayerScope scope("beam_search");
      auto expand = torch::arange(batch, b.tensors[0].options()).repeat_interleave(beam_);
      enc.memory = enc.memory.index_select(0, expand);  // [B*K, S, 2H]
      enc.pad = enc.pad.index_select(0, expand);
      for (size_t l = 0; l < state.h.size(); ++l) {
        state.h[l] = state.h[l].index_select(0, expand);
        state.c[l] = state.c[l].index_select(0, expand);
      }
      state.attention = state.attention.index_select(0, expand);
    }
    net_->project_keys(enc);
    BeamSearch search(batch, beam_, kGnmtEosId, LengthNorm::kGnmt, length_penalty_, device_);
    auto tokens = torch::full({batch * beam_}, kSosId, b.tensors[0].options());
    for (int64_t t = 0; t < target_len_; ++t) {
      auto input = run_layer("decoder_embedding", net_->decoder_embedding, tokens);  // [B*K, E]
      auto out = net_->decode_step(enc, input, state);                               // [B*K, H]
      torch::Tensor log_probs;
      {
        LayerScope scope("output_projection");
        log_probs = scope.output(torch::log_softmax(net_->output_projection->forward(out), 1));
      }
      LayerScope scope("beam_search");
      auto rows = search.step(log_probs);
      for (size_t l = 0; l < state.h.size(); ++l) {
        state.h[l] = state.h[l].index_select(0, rows);
        state.c[l] = state.c[l].index_select(0, rows);
      }
      state.attention = state.attention.index_select(0, rows);
      tokens = search.tokens();
      if (search.done()) break;
    }
    return search;
  }

  Nmt net_;
  torch::Device device_;
  double length_penalty_, max_grad_norm_;
  std::unique_ptr<torch::optim::SGD> optimizer_;
  torch::Tensor source_probs_, target_probs_;
};

}  // namespace

Workload make_gnmt() {
  Workload w;
  w.info.name = "gnmt";
  w.info.suites = {"tbd"};
  w.info.domain = "machine translation";
  w.info.description =
      "TBD's NMT (TensorFlow nmt, IWSLT15 En-Vi settings): bidirectional 512-unit LSTM encoder, "
      "2x512 LSTM decoder with scaled Luong attention, 17,191/7,709 vocabularies, dropout 0.2, "
      "SGD 1.0 clip 5, batch 128 of 20-30-word sentences; beam 10 in inference";
  w.info.source =
      "Zhu et al., TBD, IISWC 2018 (Seq2Seq/NMT on IWSLT15 En-Vi, vocabulary 17,188, batch up "
      "to 128); Luong et al. 2017 TensorFlow nmt tutorial code, standard_hparams/iwslt15.json";
  w.info.throughput_unit = "tokens/s";
  w.info.small_batch = 4;
  w.info.tiny_config = {"batch=3",      "source_vocab=40", "target_vocab=30",
                        "embedding=8",  "hidden=8",        "source_len=5",
                        "target_len=6", "min_len=3",       "beam=3"};
  w.default_config = [] {
    Config c;
    c.add_int("batch", 128, "sentence pairs per batch (nmt iwslt15: 128; TBD's TF maximum)");
    c.add_int("source_vocab", 17191, "English vocabulary: 17,188 words (TBD) + <unk>, <s>, </s>",
              kGnmtReservedIds + 1);
    c.add_int("target_vocab", 7709, "Vietnamese vocabulary of the nmt IWSLT15 data",
              kGnmtReservedIds + 1);
    c.add_int("embedding", 512, "embedding size (nmt: num_units 512)");
    c.add_int("hidden", 512, "LSTM units per layer and direction (nmt iwslt15: 512)");
    c.add_int("decoder_layers", 2, "decoder LSTM layers (nmt iwslt15: num_layers 2)");
    c.add_double("dropout", 0.2, "LSTM input dropout (nmt iwslt15: 0.2)");
    c.add_int("source_len", 30, "source positions: longest sentence, in words (TBD: 20-30)", 2);
    c.add_int("target_len", 31, "target positions: words + </s>", 2);
    c.add_int("min_len", 20, "shortest sentence in words (TBD: 20-30 words per sentence)");
    c.add_double("lr", 1.0, "SGD learning rate (nmt iwslt15: 1.0)");
    c.add_double("max_grad_norm", 5.0, "global gradient-norm clip (nmt: 5)");
    c.add_int("beam", 10, "beam width in inference (nmt iwslt15: 10)");
    c.add_double("length_penalty", 1.0, "GNMT length penalty weight (nmt iwslt15: 1.0)");
    return c;
  };
  w.build = build_model<NmtModel>;
  return w;
}

}  // namespace plumb::workloads
