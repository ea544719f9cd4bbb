// memnet: End-To-End Memory Network (Sukhbaatar et al., NIPS 2015) on bAbI, Fathom's memnet
// workload. Default = the paper's bAbI model:
//   - K = 3 hops, embedding d = 20, memory of the 50 most recent sentences;
//   - adjacent weight tying: embeddings E_0..E_K (A^1 = B = E_0, C^k = A^{k+1} = E_k,
//     W^T = C^K = E_K), temporal-encoding matrices T_0..T_K tied the same way;
//   - position encoding l_kj = (1 - j/J) - (k/d)(1 - 2j/J) on sentence and question words;
//   - u^{k+1} = u^k + o^k, answer logits = E_K u^{K+1}; no linear start, no random noise;
//   - SGD lr 0.01, batch 32, loss summed (not averaged) over the batch, gradients with a
//     global L2 norm above 40 rescaled to 40.
// tying=fathom reproduces Fathom's TensorFlow code instead (Dominique Luna's memn2n): one story
// embedding A used for both input and output memories, question embedding B, one temporal
// matrix TA, a d x d matrix H between hops (u^{k+1} = H u^k + o^k), output matrix W; Fathom
// trains it with Adam 0.01, per-tensor clipping at 40 and Gaussian gradient noise (1e-3).
// Data: bAbI task 1 (the task Fathom loads): 19 words + nil = 20 ids, sentences of at most 6
// words, stories of at most 10 sentences.
// Trainable parameters (default): 4 x 20x20 + 4 x 50x20 = 5,600 (docs/workloads.md).
#include "plumb/workloads/fathom/memnet.h"

#include <string>
#include <vector>

#include "plumb/core/layer_scope.h"
#include "plumb/workloads/common/model_builder.h"

namespace plumb::workloads {
namespace {

namespace F = torch::nn::functional;

// Position encoding (paper Sec. 4.1): [J, d], l_kj = 1 + 4 (k - (d+1)/2)(j - (J+1)/2) / (d J)
// with 1-based j (word) and k (embedding dimension), the form Fathom's code computes.
torch::Tensor position_encoding(int64_t words, int64_t dim) {
  auto j = torch::arange(1, words + 1, torch::kFloat).unsqueeze(1);  // [J, 1]
  auto k = torch::arange(1, dim + 1, torch::kFloat).unsqueeze(0);    // [1, d]
  return 1 + 4 * (k - (dim + 1) / 2.0) * (j - (words + 1) / 2.0) / (dim * words);
}

struct MemNetImpl : torch::nn::Module {
  explicit MemNetImpl(const Config& c)
      : hops(c.get_int("hops")), fathom_tying(c.get_string("tying") == "fathom") {
    const int64_t vocab = c.get_int("vocab"), dim = c.get_int("embedding");
    const int64_t memory = c.get_int("memory_size");
    // Both sources draw weights from N(0, 0.1) and keep the nil word (id 0) at zero.
    auto embedding = [&](const std::string& name, int64_t rows) {
      auto w = torch::randn({rows, dim}) * 0.1;
      w[0].zero_();
      return register_parameter(name, w);
    };
    auto matrix = [&](const std::string& name, int64_t rows, int64_t cols) {
      return register_parameter(name, torch::randn({rows, cols}) * 0.1);
    };
    if (fathom_tying) {
      embeddings = {embedding("A", vocab), embedding("B", vocab)};  // story, question
      temporal = {matrix("TA", memory, dim)};
      H = matrix("H", dim, dim);
      W = matrix("W", dim, vocab);
    } else {
      for (int64_t k = 0; k <= hops; ++k) {
        embeddings.push_back(embedding("E" + std::to_string(k), vocab));
        temporal.push_back(matrix("T" + std::to_string(k), memory, dim));
      }
    }
    encoding = register_buffer("encoding", position_encoding(c.get_int("sentence_size"), dim));
  }

  // Memory vectors of a story under embedding `e` and temporal matrix `t`:
  // stories [N, M, J] -> [N, M, d]
  torch::Tensor memories(const std::string& name, const torch::Tensor& stories,
                         const torch::Tensor& e, const torch::Tensor& t) {
    LayerScope scope(name);
    auto words = F::embedding(stories, e);  // [N, M, J, d]
    return scope.output((words * encoding).sum(2) + t);
  }

  // stories [N, M, J], question [N, J] -> answer logits [N, V]
  torch::Tensor forward(const torch::Tensor& stories, const torch::Tensor& question) {
    torch::Tensor u;
    {
      LayerScope scope("question");
      auto q = F::embedding(question, fathom_tying ? embeddings[1] : embeddings[0]);  // [N, J, d]
      u = scope.output((q * encoding).sum(1));                                        // [N, d]
    }
    // Embed the story once per distinct matrix: Fathom's code has one (m = c), the paper's
    // adjacent tying K + 1 (hop k reads E_{k-1} as input and E_k as output memory).
    std::vector<torch::Tensor> mem;
    const size_t distinct = fathom_tying ? 1 : embeddings.size();
    for (size_t k = 0; k < distinct; ++k)
      mem.push_back(memories("memory." + std::to_string(k), stories, embeddings[k], temporal[k]));
    for (int64_t k = 0; k < hops; ++k) {
      LayerScope scope("hop." + std::to_string(k));
      const auto& in = fathom_tying ? mem[0] : mem[k];                        // [N, M, d]
      const auto& out = fathom_tying ? mem[0] : mem[k + 1];                   // [N, M, d]
      auto p = torch::softmax(torch::bmm(in, u.unsqueeze(2)).squeeze(2), 1);  // [N, M]
      auto o = torch::bmm(p.unsqueeze(1), out).squeeze(1);                    // [N, d]
      u = scope.output(fathom_tying ? torch::mm(u, H) + o : u + o);           // [N, d]
    }
    LayerScope scope("answer");
    return scope.output(fathom_tying ? torch::mm(u, W)  // [N, V]
                                     : torch::mm(u, embeddings.back().t()));
  }

  int64_t hops;
  bool fathom_tying;
  std::vector<torch::Tensor> embeddings, temporal;
  torch::Tensor H, W;
  torch::Tensor encoding;  // [J, d] position encoding
};
TORCH_MODULE(MemNet);

class MemNetModel : public Model {
 public:
  MemNetModel(const Config& c, const torch::Device& device)
      : net_(c),
        device_(device),
        batch_(c.get_int("batch")),
        vocab_(c.get_int("vocab")),
        memory_(c.get_int("memory_size")),
        sentence_(c.get_int("sentence_size")),
        max_story_(std::min(c.get_int("max_story"), c.get_int("memory_size"))),
        question_len_(std::min<int64_t>(3, c.get_int("sentence_size"))),
        max_grad_norm_(c.get_double("max_grad_norm")),
        fathom_(c.get_string("tying") == "fathom") {
    net_->to(device);
    if (fathom_)
      optimizer_ = std::make_unique<torch::optim::Adam>(
          net_->parameters(), torch::optim::AdamOptions(c.get_double("lr")).eps(1e-8));
    else
      optimizer_ = std::make_unique<torch::optim::SGD>(
          net_->parameters(), torch::optim::SGDOptions(c.get_double("lr")));
  }

  torch::nn::Module& module() override { return *net_; }

  // tensors: stories [N, M, J] int64 (word ids, 0 = nil padding; sentences in story order,
  // empty memories after them as Fathom's vectorize_data), questions [N, J], answers [N].
  Batch make_batch() override {
    auto opts = torch::TensorOptions().dtype(torch::kLong).device(device_);
    // bAbI task 1 sentences have 4-6 words ("mary moved to the bathroom", "john went back to
    // the hallway"): lengths uniform in [2J/3, J]; stories hold 1..max_story sentences.
    auto sentence_len = torch::randint((2 * sentence_ + 2) / 3, sentence_ + 1, {batch_, memory_, 1},
                                       opts);                                  // [N, M, 1]
    auto story_len = torch::randint(1, max_story_ + 1, {batch_, 1, 1}, opts);  // [N, 1, 1]
    auto word_pos = torch::arange(sentence_, opts).view({1, 1, sentence_});    // [1, 1, J]
    auto slot = torch::arange(memory_, opts).view({1, memory_, 1});            // [1, M, 1]
    auto keep = word_pos.lt(sentence_len).logical_and(slot.lt(story_len));     // [N, M, J]
    auto stories = torch::randint(1, vocab_, {batch_, memory_, sentence_}, opts) * keep;
    auto question = torch::randint(1, vocab_, {batch_, sentence_}, opts) *
                    torch::arange(sentence_, opts).lt(question_len_).unsqueeze(0);  // [N, J]
    auto answers = torch::randint(1, vocab_, {batch_}, opts);                       // [N]
    return {{stories, question, answers}, static_cast<double>(batch_)};
  }

  double train_step(const Batch& b) override {
    {
      LayerScope scope("optimizer");
      optimizer_->zero_grad();
    }
    auto logits = net_->forward(b.tensors[0], b.tensors[1]);  // [N, V]
    torch::Tensor loss;
    {
      LayerScope scope("loss");  // both sources sum, not average, over the batch
      loss = scope.output(F::cross_entropy(logits, b.tensors[2],
                                           F::CrossEntropyFuncOptions().reduction(torch::kSum)));
    }
    loss.backward();
    {
      LayerScope scope("optimizer");  // gradient processing is part of the update rule
      torch::NoGradGuard no_grad;
      if (fathom_) {
        // Fathom: clip each tensor's norm at 40, add N(0, 1e-3) noise, zero the nil rows.
        for (auto& p : net_->parameters()) {
          auto g = p.mutable_grad();
          torch::nn::utils::clip_grad_norm_(p, max_grad_norm_);
          g.add_(torch::randn_like(g) * 1e-3);
        }
        for (size_t i = 0; i < net_->embeddings.size(); ++i)
          net_->embeddings[i].mutable_grad()[0].zero_();
      } else {
        torch::nn::utils::clip_grad_norm_(net_->parameters(), max_grad_norm_);
        for (auto& e : net_->embeddings) e.mutable_grad()[0].zero_();  // nil word stays 0
      }
      optimizer_->step();
    }
    return loss.item<double>();
  }

  double infer_step(const Batch& b) override {
    auto logits = net_->forward(b.tensors[0], b.tensors[1]);
    return std::get<0>(logits.max(1)).sum().item<double>();
  }

  // Answer logits [B, vocab].
  torch::Tensor infer_output(const Batch& b) override {
    return net_->forward(b.tensors[0], b.tensors[1]);
  }

 private:
  MemNet net_;
  torch::Device device_;
  int64_t batch_, vocab_, memory_, sentence_, max_story_, question_len_;
  double max_grad_norm_;
  bool fathom_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
};

}  // namespace

Workload make_memnet() {
  Workload w;
  w.info.name = "memnet";
  w.info.suites = {"fathom"};
  w.info.domain = "question answering";
  w.info.description =
      "End-to-end memory network: 3 hops, embedding 20, memory 50 sentences, adjacent weight "
      "tying, position + temporal encoding, bAbI task 1 vocabulary (20 ids)";
  w.info.source =
      "Sukhbaatar et al., NIPS 2015 (bAbI model: K=3, d=20, PE, TE, adjacent tying, SGD 0.01, "
      "clip 40, batch 32); Fathom's memnet (bAbI task 1; tying=fathom = its code)";
  w.info.throughput_unit = "questions/s";
  w.info.small_batch = 32;
  w.info.tiny_config = {"batch=4", "embedding=8", "memory_size=6", "max_story=6"};
  w.default_config = [] {
    Config c;
    c.add_int("batch", 32, "mini-batch size (paper and Fathom: 32)");
    c.add_choice("tying", "adjacent", {"adjacent", "fathom"},
                 "weight tying: paper's adjacent (default) or Fathom's code (A=C, H between "
                 "hops, Adam + gradient noise)");
    c.add_int("hops", 3, "memory hops K (paper and Fathom: 3)");
    c.add_int("embedding", 20, "embedding size d (paper's bAbI setting and Fathom: 20)");
    c.add_int("memory_size", 50,
              "memory slots: the 50 most recent sentences (paper; Fathom caps it at the longest "
              "story, 10 on task 1)");
    c.add_int("max_story", 10, "longest story in sentences (bAbI task 1: 10)");
    c.add_int("sentence_size", 6, "words per sentence slot (bAbI task 1: longest sentence, 6)");
    c.add_int("vocab", 20, "word ids incl. nil (bAbI task 1: 19 words + nil, as Fathom)", 2);
    c.add_double("lr", 0.01, "learning rate (paper: SGD 0.01; Fathom: Adam 0.01)");
    c.add_double("max_grad_norm", 40.0, "gradient L2-norm clip (paper and Fathom: 40)");
    return c;
  };
  w.build = build_model<MemNetModel>;
  return w;
}

}  // namespace plumb::workloads
