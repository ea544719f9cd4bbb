// seq2seq: Fathom's attention-based LSTM encoder-decoder for translation (Sutskever et al.
// 2014 with Bahdanau et al.'s attention), configured exactly as Fathom's reference code, the
// TensorFlow "translate" model built by embedding_attention_seq2seq:
//   - source and target vocabularies of 40,000 words, embeddings of 256;
//   - encoder and decoder: 3 stacked LSTM layers of 256 units each (separate weights), every
//     layer parameterised like TensorFlow's BasicLSTMCell (one 4H bias vector);
//   - one attention head over the top encoder layer's outputs: memory projection W1 (no bias),
//     query projection of the flattened decoder state (c and h of all 3 layers = 1536 values),
//     score v^T tanh(W1 h_s + W2 q); attention fed back into the next decoder input through an
//     input projection, and mixed into the output through an output projection;
//   - an output projection 256 -> 40,000; training uses sampled softmax with 512 log-uniform
//     samples per time step, inference computes the full softmax and feeds back the argmax
//     (greedy decoding);
//   - the largest bucket, 40 source and 50 target positions, batch 64;
//   - plain SGD with learning rate 0.5 and global gradient-norm clipping at 5.
// Embedding gradients are sparse, as TensorFlow's IndexedSlices are: only rows seen are updated.
// Trainable parameters: 34,633,792 (derivation in docs/workloads.md).
#include "plumb/workloads/fathom/seq2seq.h"

#include <cmath>
#include <string>
#include <vector>

#include "plumb/core/layer_scope.h"
#include "plumb/workloads/common/clipped_update.h"
#include "plumb/workloads/common/model_builder.h"
#include "plumb/workloads/common/synthetic_data.h"

namespace plumb::workloads {
namespace {

namespace nn = torch::nn;
namespace F = torch::nn::functional;

constexpr int64_t kSeq2seqReservedIds = 4;  // PAD, GO, EOS, UNK as in the translate model
constexpr int64_t kGoId = 1;

// One LSTM layer with a single bias vector (TensorFlow BasicLSTMCell parameterisation).
struct LstmLayerImpl : nn::Module {
  LstmLayerImpl(int64_t input, int64_t hidden) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(hidden));
    w_ih =
        register_parameter("weight_ih", torch::empty({4 * hidden, input}).uniform_(-bound, bound));
    w_hh =
        register_parameter("weight_hh", torch::empty({4 * hidden, hidden}).uniform_(-bound, bound));
    bias = register_parameter("bias", torch::zeros({4 * hidden}));
    // BasicLSTMCell adds a forget bias of 1.0; starting the forget slice (i, f, g, o order) at
    // 1 gives the same cell at initialisation.
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

struct LstmState {
  std::vector<torch::Tensor> h, c;  // per layer, [B, H]
};

// Runs one time step through the stack; returns the top layer's output.
torch::Tensor stack_step(nn::ModuleList& layers, const std::string& path, torch::Tensor x,
                         LstmState& state) {
  for (size_t l = 0; l < layers->size(); ++l) {
    LayerScope scope(path + "." + std::to_string(l));
    std::tie(state.h[l], state.c[l]) =
        layers[l]->as<LstmLayer>()->forward(x, state.h[l], state.c[l]);
    x = scope.output(state.h[l]);
  }
  return x;
}

nn::ModuleList make_stack(int64_t layers, int64_t input, int64_t hidden) {
  nn::ModuleList list;
  for (int64_t l = 0; l < layers; ++l) list->push_back(LstmLayer(l == 0 ? input : hidden, hidden));
  return list;
}

struct TranslateAttentionImpl : nn::Module {
  TranslateAttentionImpl(int64_t memory, int64_t query, int64_t size)
      : memory_proj(register_module("memory_proj",
                                    nn::Linear(nn::LinearOptions(memory, size).bias(false)))),
        query_proj(register_module("query_proj", nn::Linear(query, size))) {
    v = register_parameter("v", torch::empty({size}).uniform_(-0.1, 0.1));
  }
  nn::Linear memory_proj, query_proj;
  torch::Tensor v;
};
TORCH_MODULE(TranslateAttention);

struct Seq2SeqImpl : nn::Module {
  explicit Seq2SeqImpl(const Config& c)
      : hidden(c.get_int("hidden")),
        layers(c.get_int("layers")),
        encoder_embedding(register_module(
            "encoder_embedding",
            nn::Embedding(nn::EmbeddingOptions(c.get_int("source_vocab"), c.get_int("embedding"))
                              .sparse(true)))),
        encoder_lstm(
            register_module("encoder_lstm", make_stack(layers, c.get_int("embedding"), hidden))),
        decoder_embedding(register_module(
            "decoder_embedding",
            nn::Embedding(nn::EmbeddingOptions(c.get_int("target_vocab"), c.get_int("embedding"))
                              .sparse(true)))),
        input_proj(register_module(
            "input_proj", nn::Linear(c.get_int("embedding") + hidden, c.get_int("embedding")))),
        decoder_lstm(
            register_module("decoder_lstm", make_stack(layers, c.get_int("embedding"), hidden))),
        attention(
            register_module("attention", TranslateAttention(hidden, 2 * layers * hidden, hidden))),
        output_proj(register_module("output_proj", nn::Linear(2 * hidden, hidden))),
        projection(register_module("projection", nn::Linear(hidden, c.get_int("target_vocab")))) {}

  struct Encoded {
    torch::Tensor outputs;   // [B, S, H] top-layer outputs
    torch::Tensor features;  // [B, S, H] memory projection W1 h_s, computed once
    LstmState state;         // final state, the decoder's initial state
  };

  // source: [B, S] token ids
  Encoded encode(const torch::Tensor& source) {
    const int64_t batch = source.size(0), steps = source.size(1);
    auto embedded = run_layer("encoder_embedding", encoder_embedding, source);  // [B, S, E]
    auto zeros = torch::zeros({batch, hidden}, source.options().dtype(torch::kFloat));
    Encoded enc{
        {},
        {},
        {std::vector<torch::Tensor>(layers, zeros), std::vector<torch::Tensor>(layers, zeros)}};
    std::vector<torch::Tensor> outputs;
    for (int64_t t = 0; t < steps; ++t)
      outputs.push_back(stack_step(encoder_lstm, "encoder_lstm", embedded.select(1, t), enc.state));
    enc.outputs = torch::stack(outputs, 1);  // [B, S, H]
    enc.features =
        run_layer("attention.memory_proj", attention->memory_proj, enc.outputs);  // [B, S, H]
    return enc;
  }

  // Attention read for the current decoder state -> context [B, H].
  torch::Tensor attend(const Encoded& enc, const LstmState& state) {
    std::vector<torch::Tensor> flat;  // TF flattens the state tuple: (c0, h0, c1, h1, ...)
    for (int64_t l = 0; l < layers; ++l) {
      flat.push_back(state.c[l]);
      flat.push_back(state.h[l]);
    }
    auto query =
        run_layer("attention.query_proj", attention->query_proj, torch::cat(flat, 1));  // [B, H]
    LayerScope scope("attention");
    auto scores = (torch::tanh(enc.features + query.unsqueeze(1)) * attention->v).sum(2);  // [B, S]
    auto weights = torch::softmax(scores, 1);                                              // [B, S]
    return scope.output(torch::bmm(weights.unsqueeze(1), enc.outputs).squeeze(1));         // [B, H]
  }

  // One decoder step: input embedding [B, E] -> output [B, H]; updates state and context.
  torch::Tensor decode_step(const Encoded& enc, const torch::Tensor& input, LstmState& state,
                            torch::Tensor& context) {
    auto x = run_layer("input_proj", input_proj, torch::cat({input, context}, 1));  // [B, E]
    auto top = stack_step(decoder_lstm, "decoder_lstm", x, state);                  // [B, H]
    context = attend(enc, state);                                                   // [B, H]
    return run_layer("output_proj", output_proj, torch::cat({top, context}, 1));    // [B, H]
  }

  // Teacher forcing: decoder_input [B, T] -> outputs [T, B, H]
  torch::Tensor forward_train(const torch::Tensor& source, const torch::Tensor& decoder_input) {
    auto enc = encode(source);
    LstmState state = enc.state;
    auto context = torch::zeros_like(enc.state.h[0]);  // attention starts empty
    auto embedded = run_layer("decoder_embedding", decoder_embedding, decoder_input);  // [B, T, E]
    std::vector<torch::Tensor> outputs;
    for (int64_t t = 0; t < decoder_input.size(1); ++t)
      outputs.push_back(decode_step(enc, embedded.select(1, t), state, context));
    return torch::stack(outputs, 0);  // [T, B, H]
  }

  // Greedy decoding of `steps` tokens: returns the sum of the chosen logits (a checksum).
  // Greedy decoding for `steps` steps; returns the sum of the chosen logits (a checksum) and,
  // when `chosen` is given, appends each step's tokens [B] to it.
  torch::Tensor forward_greedy(const torch::Tensor& source, int64_t steps,
                               std::vector<torch::Tensor>* chosen = nullptr) {
    auto enc = encode(source);
    LstmState state = enc.state;
    auto context = torch::zeros_like(enc.state.h[0]);
    auto token = torch::full({source.size(0)}, kGoId, source.options());  // [B]
    auto checksum = torch::zeros({}, context.options());
    for (int64_t t = 0; t < steps; ++t) {
      auto input = run_layer("decoder_embedding", decoder_embedding, token);  // [B, E]
      auto out = decode_step(enc, input, state, context);                     // [B, H]
      auto logits = run_layer("projection", projection, out);                 // [B, V]
      auto best = logits.max(1);
      checksum = checksum + std::get<0>(best).sum();
      token = std::get<1>(best);  // feed the previous prediction back
      if (chosen != nullptr) chosen->push_back(token);
    }
    return checksum;
  }

  int64_t hidden, layers;
  nn::Embedding encoder_embedding;
  nn::ModuleList encoder_lstm;
  nn::Embedding decoder_embedding;
  nn::Linear input_proj;
  nn::ModuleList decoder_lstm;
  TranslateAttention attention;
  nn::Linear output_proj, projection;
};
TORCH_MODULE(Seq2Seq);

class Seq2SeqModel : public Model {
 public:
  Seq2SeqModel(const Config& c, const torch::Device& device)
      : net_(c),
        device_(device),
        batch_(c.get_int("batch")),
        source_len_(c.get_int("source_len")),
        target_len_(c.get_int("target_len")),
        target_vocab_(c.get_int("target_vocab")),
        samples_(c.get_int("sampled_softmax")),
        max_grad_norm_(c.get_double("max_grad_norm")) {
    net_->to(device);
    optimizer_ = std::make_unique<torch::optim::SGD>(net_->parameters(),
                                                     torch::optim::SGDOptions(c.get_double("lr")));
    source_probs_ =
        log_uniform_probabilities(c.get_int("source_vocab") - kSeq2seqReservedIds, device);
    target_probs_ = log_uniform_probabilities(target_vocab_ - kSeq2seqReservedIds, device);
    sampler_probs_ = log_uniform_probabilities(target_vocab_, device);
  }

  nn::Module& module() override { return *net_; }

  // tensors: source [B, S], decoder input [B, T] (GO + target[:-1]), targets [B, T],
  // target weights [B, T] (1 for real tokens, 0 for padding).
  Batch make_batch() override {
    auto source = zipf_tokens(source_probs_, batch_, source_len_, kSeq2seqReservedIds);
    auto target = zipf_tokens(target_probs_, batch_, target_len_, kSeq2seqReservedIds);
    // Sentences in the (40, 50) bucket have targets longer than the previous bucket's 25.
    auto lengths = torch::randint(target_len_ / 2, target_len_ + 1, {batch_, 1},
                                  torch::TensorOptions().dtype(torch::kLong).device(device_));
    auto positions = torch::arange(target_len_, lengths.options()).unsqueeze(0);  // [1, T]
    auto weights = positions.lt(lengths).to(torch::kFloat);                       // [B, T]
    target = target * weights.to(torch::kLong);                                   // PAD = 0
    auto go = torch::full({batch_, 1}, kGoId, target.options());
    auto decoder_input = torch::cat({go, target.narrow(1, 0, target_len_ - 1)}, 1);
    // Work unit: decoder positions of the static bucket (padding is computed too).
    return {{source, decoder_input, target, weights}, static_cast<double>(batch_ * target_len_)};
  }

  double train_step(const Batch& b) override {
    {
      LayerScope scope("optimizer");
      optimizer_->zero_grad();
    }
    auto outputs = net_->forward_train(b.tensors[0], b.tensors[1]);  // [T, B, H]
    auto targets = b.tensors[2].t();                                 // [T, B]
    auto weights = b.tensors[3].t();                                 // [T, B]
    torch::Tensor loss;
    {
      LayerScope scope("loss");
      auto token_loss = samples_ > 0 && samples_ < target_vocab_  // [T, B]
                            ? sampled_softmax_loss(outputs, targets)
                            : full_softmax_loss(outputs, targets);
      // TF sequence_loss: per-example weighted mean over time, then mean over the batch.
      auto per_example = (token_loss * weights).sum(0) / (weights.sum(0) + 1e-12);  // [B]
      loss = scope.output(per_example.mean());
    }
    loss.backward();
    clipped_update(*optimizer_, net_->parameters(), max_grad_norm_);
    return loss.item<double>();
  }

  double infer_step(const Batch& b) override {
    return net_->forward_greedy(b.tensors[0], target_len_).item<double>();
  }

  // The greedy translation: token ids [B, target_len].
  torch::Tensor infer_output(const Batch& b) override {
    std::vector<torch::Tensor> tokens;
    net_->forward_greedy(b.tensors[0], target_len_, &tokens);
    return torch::stack(tokens, 1);
  }

 private:
  // Full softmax cross-entropy: outputs [T, B, H], targets [T, B] -> [T, B]
  torch::Tensor full_softmax_loss(const torch::Tensor& outputs, const torch::Tensor& targets) {
    auto logits = run_layer("projection", net_->projection, outputs);  // [T, B, V]
    return F::cross_entropy(logits.flatten(0, 1), targets.flatten(),
                            F::CrossEntropyFuncOptions().reduction(torch::kNone))
        .view(targets.sizes());
  }

  // Sampled softmax (Jean et al. 2015, TensorFlow's sampled_softmax_loss): per time step,
  // 512 distinct classes drawn log-uniformly; logits of the true class and the samples are
  // corrected by log(expected count), accidental hits are masked, and the true class is
  // index 0. Expected counts are approximated by samples * P(class).
  torch::Tensor sampled_softmax_loss(const torch::Tensor& outputs, const torch::Tensor& targets) {
    const int64_t steps = outputs.size(0);
    const auto& weight = net_->projection->weight;  // [V, H]
    const auto& bias = net_->projection->bias;      // [V]
    auto sampled = torch::multinomial(sampler_probs_.expand({steps, target_vocab_}), samples_,
                                      /*replacement=*/false);                 // [T, K]
    auto log_q = torch::log(sampler_probs_ * static_cast<double>(samples_));  // [V]
    auto true_w = F::embedding(targets, weight);                              // [T, B, H]
    auto true_logit = (outputs * true_w).sum(2) +
                      bias.index_select(0, targets.flatten()).view(targets.sizes()) -
                      log_q.index_select(0, targets.flatten()).view(targets.sizes());  // [T, B]
    auto sampled_w = F::embedding(sampled, weight);                                    // [T, K, H]
    auto sampled_logit =
        torch::bmm(outputs, sampled_w.transpose(1, 2)) +
        (bias.index_select(0, sampled.flatten()) - log_q.index_select(0, sampled.flatten()))
            .view({steps, 1, samples_});                        // [T, B, K]
    auto hits = sampled.unsqueeze(1).eq(targets.unsqueeze(2));  // [T, B, K]
    sampled_logit = sampled_logit.masked_fill(hits, -1e30);
    auto logits = torch::cat({true_logit.unsqueeze(2), sampled_logit}, 2);  // [T, B, 1 + K]
    return -torch::log_softmax(logits, 2).select(2, 0);                     // [T, B]
  }

  Seq2Seq net_;
  torch::Device device_;
  int64_t batch_, source_len_, target_len_, target_vocab_, samples_;
  double max_grad_norm_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  torch::Tensor source_probs_, target_probs_, sampler_probs_;
};

}  // namespace

Workload make_seq2seq() {
  Workload w;
  w.info = {"seq2seq",
            {"fathom"},
            "machine translation",
            "LSTM encoder-decoder with attention: 3x256 LSTM layers each side, 40k-word "
            "vocabularies, sampled softmax (512) in training, greedy decoding in inference, "
            "bucket 40->50 tokens",
            "Sutskever et al., NIPS 2014 + Bahdanau et al. attention, ICLR 2015; configuration "
            "of Fathom's seq2seq (TensorFlow translate model: WMT-15 en-fr, SGD 0.5, clip 5)",
            "tokens/s",
            8,
            {"batch=3", "source_vocab=60", "target_vocab=50", "embedding=8", "hidden=8", "layers=2",
             "source_len=5", "target_len=6", "sampled_softmax=10"}};
  w.default_config = [] {
    Config c;
    c.add_int("batch", 64, "mini-batch size (Fathom: 64)");
    c.add_int("source_vocab", 40000, "source vocabulary (Fathom: 40,000 English words)",
              kSeq2seqReservedIds + 1);
    c.add_int("target_vocab", 40000, "target vocabulary (Fathom: 40,000 French words)",
              kSeq2seqReservedIds + 1);
    c.add_int("embedding", 256, "word embedding size (Fathom: equal to the LSTM size)");
    c.add_int("hidden", 256, "LSTM units per layer (Fathom: 256)");
    c.add_int("layers", 3, "stacked LSTM layers in encoder and decoder (Fathom: 3)");
    c.add_int("source_len", 40, "source positions: the largest bucket's 40");
    c.add_int("target_len", 50, "target positions: the largest bucket's 50", 2);
    c.add_int("sampled_softmax", 512, "sampled classes per step in training; 0 = full softmax", 0);
    c.add_double("lr", 0.5, "SGD learning rate (Fathom: 0.5)");
    c.add_double("max_grad_norm", 5.0, "global gradient-norm clip (Fathom: 5.0)");
    return c;
  };
  w.build = build_model<Seq2SeqModel>;
  return w;
}

}  // namespace plumb::workloads
