// paradnn_rnn: ParaDnn's parameterised recurrent model (Wang, Wei & Brooks, MLSys 2020,
// Sec. 2.1 and Table 2c), as its public code builds it (github.com/Emma926/paradnn, rnn.py):
//
//   token ids [B, T] -> embedding (vocab x E)                                  [B, T, E]
//   -> `layers` stacked cells of E units (basic RNN, LSTM or GRU), zero initial state,
//      all T steps run (dynamic_rnn without sequence lengths)                  [B, T, E]
//   -> output dense E -> vocab (weight + bias) on every position                [B, T, V]
//   -> softmax cross-entropy against the next token, masked by a random length per sequence
//      and divided by the number of unmasked tokens.
//
// Cells are parameterised as TensorFlow's (one bias vector per layer): BasicRNNCell
// h' = tanh(W [x, h] + b); BasicLSTMCell with forget_bias 0.0 (rnn.py), gates i, j, f, o;
// GRUCell with gate bias initialised to 1.0. The hidden size equals the embedding size
// (rnn.py builds every cell with embedding_size units). They run through torch's rnn_tanh_cell,
// lstm_cell and gru_cell; gru_cell applies the reset gate after the recurrent matrix product
// (TF: before it), which changes neither parameters nor MACs. Weights are Glorot-uniform over
// TF's [E + H, G H] kernel (TF 1.x's default), biases zero; the embedding is Glorot-uniform as
// tf.get_variable's default, the output layer (tf.contrib.layers.linear) Glorot-uniform with a
// zero bias.
//
// Data as rnn.py's input_fn: T + 1 token ids uniform in [0, vocab) per sequence; the first T
// are the inputs, the last T the labels. rnn.py draws lengths uniform in [0, T), so a sequence
// can be empty; plumb draws them in [1, T] (common/token_data.h) so every sequence has a token.
// Optimizer RMSProp (decay 0.9, momentum 0.9, epsilon 1.0), learning rate 0.1 (rnn.py decays it
// by 0.9 every 10,000 steps: a 1e-5 relative change per step, not modelled).
//
// Parameters (closed form; V = vocab, E = embedding = hidden, L = layers, G = 1 rnn / 4 lstm /
// 3 gru):
//   embedding:  V E
//   cells:      L (G E (E + E) + G E) = L G (2 E^2 + E)
//   output:     E V + V
// Forward MACs per sequence: T (L G 2 E^2 + E V).
//
// Default: cell rnn (the paper's default), layers 5 (Table 2c: 1..13, +4; rnn.py's default),
// embedding 500 (100..900, +400: the middle), max_length 50 (10..90, +40: the middle;
// rnn.py's default), vocab 32 (2..1024, x4: the middle of 2, 8, 32, 128, 512), batch 64
// (16..1024, x4: the middle of 16, 64, 256, 1024, the lower one).
#include "plumb/workloads/paradnn/paradnn_rnn.h"

#include <string>
#include <tuple>
#include <vector>

#include "plumb/core/errors.h"
#include "plumb/core/layer_scope.h"
#include "plumb/workloads/common/model_builder.h"
#include "plumb/workloads/common/token_data.h"
#include "plumb/workloads/paradnn/paradnn_common.h"

namespace plumb::workloads {
namespace {

namespace nn = torch::nn;
namespace F = torch::nn::functional;

enum class Cell { kRnn, kLstm, kGru };

int64_t gates(Cell cell) {
  switch (cell) {
    case Cell::kRnn:
      return 1;
    case Cell::kLstm:
      return 4;
    case Cell::kGru:
      return 3;
  }
  return 0;
}

Cell parse_cell(const std::string& name) {
  if (name == "rnn") return Cell::kRnn;
  if (name == "lstm") return Cell::kLstm;
  if (name == "gru") return Cell::kGru;
  throw UsageError("cell must be one of: rnn, lstm, gru (got '" + name + "')");
}

// One recurrent layer with TensorFlow's single bias vector. State: h (and c for the LSTM).
struct CellLayerImpl : nn::Module {
  CellLayerImpl(Cell kind, int64_t input, int64_t hidden) : cell(kind) {
    const int64_t g = gates(kind);
    w_ih = register_parameter("weight_ih", torch::empty({g * hidden, input}));
    w_hh = register_parameter("weight_hh", torch::empty({g * hidden, hidden}));
    bias = register_parameter("bias", torch::zeros({g * hidden}));
    // TF initialises its kernel [input + hidden, g hidden] as one Glorot-uniform matrix.
    glorot_uniform_(w_ih, input + hidden, g * hidden);
    glorot_uniform_(w_hh, input + hidden, g * hidden);
    // TF's GRUCell starts the reset and update gate biases at 1.0 (torch order r, z, n).
    torch::NoGradGuard no_grad;
    if (kind == Cell::kGru) bias.narrow(0, 0, 2 * hidden).fill_(1.0);
  }

  // x: [B, input], h/c: [B, H] -> new h, c (c undefined unless LSTM)
  std::tuple<torch::Tensor, torch::Tensor> forward(const torch::Tensor& x, const torch::Tensor& h,
                                                   const torch::Tensor& c) {
    switch (cell) {
      case Cell::kRnn:
        return {torch::rnn_tanh_cell(x, h, w_ih, w_hh, bias, {}), c};
      case Cell::kLstm:
        return torch::lstm_cell(x, {h, c}, w_ih, w_hh, bias, {});
      case Cell::kGru:
        return {torch::gru_cell(x, h, w_ih, w_hh, bias, {}), c};
    }
    return {h, c};
  }

  Cell cell;
  torch::Tensor w_ih, w_hh, bias;
};
TORCH_MODULE(CellLayer);

struct ParaRnnImpl : nn::Module {
  ParaRnnImpl(Cell kind, int64_t layers, int64_t embedding, int64_t vocab)
      : cell(kind),
        hidden(embedding),
        embed(register_module("embedding", nn::Embedding(vocab, embedding))),
        output(register_module("output", nn::Linear(embedding, vocab))) {
    glorot_uniform_(embed->weight, vocab, embedding);
    glorot_uniform_(output->weight, embedding, vocab);
    nn::init::zeros_(output->bias);
    for (int64_t l = 0; l < layers; ++l) cells->push_back(CellLayer(kind, embedding, hidden));
    register_module("rnn", cells);
  }

  // tokens: [B, T] int64 -> logits [B, T, V]
  torch::Tensor forward(const torch::Tensor& tokens) {
    const int64_t batch = tokens.size(0), steps = tokens.size(1);
    auto x = run_layer("embedding", embed, tokens);  // [B, T, E]
    const auto zeros = torch::zeros({batch, hidden}, x.options());
    // Layer by layer over the whole sequence, as TF's MultiRNNCell inside dynamic_rnn computes
    // the same values (each layer consumes the one below); the order only changes scheduling.
    for (size_t l = 0; l < cells->size(); ++l) {
      const std::string name = "rnn." + std::to_string(l);
      LayerScope scope(name);
      auto layer = cells[l]->as<CellLayer>();
      torch::Tensor h = zeros, c = cell == Cell::kLstm ? zeros : torch::Tensor();
      std::vector<torch::Tensor> outputs;
      outputs.reserve(steps);
      for (int64_t t = 0; t < steps; ++t) {
        std::tie(h, c) = layer->forward(x.select(1, t), h, c);  // [B, H]
        outputs.push_back(h);
      }
      x = scope.output(torch::stack(outputs, 1));  // [B, T, H]
    }
    return run_layer("output", output, x);  // [B, T, V]
  }

  Cell cell;
  int64_t hidden;
  nn::Embedding embed;
  nn::Linear output;
  nn::ModuleList cells;
};
TORCH_MODULE(ParaRnn);

// Batch layout: tensors[0] = inputs [B, T] int64, tensors[1] = labels [B, T] int64 (the inputs
// shifted by one), tensors[2] = loss mask [B, T] float (1 at positions < length).
class ParaRnnModel : public Model {
 public:
  ParaRnnModel(const Config& c, const torch::Device& device)
      : net_(parse_cell(c.get_string("cell")), c.get_int("layers"), c.get_int("embedding"),
             c.get_int("vocab")),
        batch_(c.get_int("batch")),
        steps_(c.get_int("max_length")),
        vocab_(c.get_int("vocab")),
        device_(device) {
    net_->to(device);
    optimizer_ = make_paradnn_optimizer(net_->parameters(), c);
  }

  nn::Module& module() override { return *net_; }

  Batch make_batch() override {
    auto ids = torch::randint(vocab_, {batch_, steps_ + 1},
                              torch::TensorOptions().dtype(torch::kLong).device(device_));
    auto lengths = sentence_lengths(batch_, 1, steps_, device_);  // [B]
    Batch b;
    b.tensors = {ids.narrow(1, 0, steps_).contiguous(),            // [B, T]
                 ids.narrow(1, 1, steps_).contiguous(),            // [B, T]
                 length_mask(lengths, steps_).to(torch::kFloat)};  // [B, T]
    // Every position runs through the stack (the mask only weights the loss).
    b.units = static_cast<double>(batch_ * steps_);
    return b;
  }

  double train_step(const Batch& batch) override {
    {
      LayerScope scope("optimizer");
      optimizer_->zero_grad();
    }
    auto logits = net_->forward(batch.tensors[0]);  // [B, T, V]
    torch::Tensor loss;
    {
      // rnn.py: sum(mask * cross-entropy) / number of unmasked tokens.
      LayerScope scope("loss");
      const auto& mask = batch.tensors[2];  // [B, T]
      auto per_token = F::cross_entropy(logits.reshape({-1, vocab_}), batch.tensors[1].reshape(-1),
                                        F::CrossEntropyFuncOptions().reduction(torch::kNone));
      loss = scope.output((per_token * mask.reshape(-1)).sum() / mask.sum());
    }
    loss.backward();
    {
      LayerScope scope("optimizer");
      optimizer_->step();
    }
    return loss.item<double>();
  }

  double infer_step(const Batch& batch) override {
    return net_->forward(batch.tensors[0]).sum().item<double>();
  }

 private:
  ParaRnn net_;
  int64_t batch_, steps_, vocab_;
  torch::Device device_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
};

}  // namespace

int64_t paradnn_rnn_parameters(const Config& c) {
  const int64_t G = gates(parse_cell(c.get_string("cell")));
  const int64_t L = c.get_int("layers"), E = c.get_int("embedding"), V = c.get_int("vocab");
  return V * E + L * G * (2 * E * E + E) + E * V + V;
}

Workload make_paradnn_rnn() {
  Workload w;
  w.info = {"paradnn_rnn",
            {"paradnn"},
            "parameterised recurrent model",
            "ParaDnn RNN generator: embedding -> layers x [RNN/LSTM/GRU cell, hidden = "
            "embedding] -> dense over the vocabulary, masked per-token softmax cross-entropy; "
            "default 5 basic RNN layers of 500, 50 steps, vocabulary 32",
            "Wang, Wei & Brooks, Benchmarking TPU, GPU, and CPU Platforms for Deep Learning, "
            "MLSys 2020 (Sec. 2.1, Table 2c ranges); cells, sizes, data, masked loss and "
            "optimizer from its public code (Emma926/paradnn rnn.py)",
            "tokens/s",
            64,
            {"batch=4", "layers=2", "embedding=16", "max_length=6", "vocab=8"}};
  w.default_config = [] {
    Config c;
    c.add_int("batch", 64, "mini-batch size (Table 2c: 16..1024, x4)");
    c.add_choice("cell", "rnn", {"rnn", "lstm", "gru"},
                 "recurrent cell: rnn (basic tanh RNN, the paper's default), lstm or gru");
    c.add_int("layers", 5, "stacked recurrent layers (Table 2c: 1..13, +4)");
    c.add_int("embedding", 500,
              "embedding size, also the cells' hidden size as in rnn.py (Table 2c: 100..900, "
              "+400)");
    c.add_int("max_length", 50, "time steps per sequence (Table 2c: 10..90, +40)");
    c.add_int("vocab", 32, "vocabulary size, input and output (Table 2c: 2..1024, x4)", 2);
    add_paradnn_optimizer_keys(c);
    return c;
  };
  w.build = build_model<ParaRnnModel>;
  return w;
}

}  // namespace plumb::workloads
