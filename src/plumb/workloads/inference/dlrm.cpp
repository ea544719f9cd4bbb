// dlrm: the Deep Learning Recommendation Model (Naumov et al., DLRM, arXiv:1906.00091, 2019),
// the embedding-tables-plus-MLPs recommendation model of the Facebook inference study
// (Park et al., Deep Learning Inference in Facebook Data Centers, 2018: "dense features ->
// FCs, sparse features -> embedding lookups (SparseLengthsSum), combined by FCs"), built as
// the reference implementation dlrm_s_pytorch.py (facebookresearch/dlrm) builds it:
//   - dense features [B, 13 or 4] -> bottom MLP (Linear + ReLU each layer) -> [B, d];
//   - one EmbeddingBag (sum pooling, sparse gradients) per categorical feature, a multi-hot
//     lookup of `pooling` indices per example and table -> [B, d] each;
//   - dot interaction: T = [x, e_1 .. e_n] as [B, n+1, d], Z = T T^T, keep the strictly lower
//     triangle ((n+1) n / 2 values, no self-interaction: --arch-interaction-itself False),
//     concatenated after x;
//   - top MLP (ReLU, sigmoid on the last layer) -> click probability [B, 1];
//   - BCE loss (--loss-function=bce, as every Criteo configuration), plain SGD with lr 0.01
//     (reference default); embedding gradients are sparse (COO rows), as the reference.
// Initialisation as the reference: embeddings U(-sqrt(1/rows), sqrt(1/rows)); Linear weights
// N(0, sqrt(2/(in+out))), biases N(0, sqrt(1/out)).
//
// Presets (config key `preset`; architecture only, batch and lr stay their own keys):
//   small     the reference's command-line defaults: 3 tables of 4, 3, 2 rows, d = 2, bottom
//             4-3-2, top 8-4-2-1, up to 10 indices per lookup: 90 parameters, 92 MACs/sample.
//   benchmark bench/dlrm_s_benchmark.sh (the paper's Sec. 6 performance model): 8 tables of
//             1,000,000 rows, d = 64, bottom 512-512-64, top 100-1024-1024-1024-1, up to 100
//             indices per lookup (batch 2048 there): 514,499,137 parameters, 2.06 GB.
//   kaggle    bench/dlrm_s_criteo_kaggle.sh: 26 tables sized by Criteo Kaggle's categorical
//             cardinalities (33,762,577 rows), d = 16, bottom 13-512-256-64-16, top
//             367-512-256-1, one index per lookup (batch 128, lr 0.1 there): 540,677,217
//             parameters, 2.16 GB.
//   terabyte  bench/dlrm_s_criteo_terabyte.sh: 26 tables of Criteo Terabyte's cardinalities
//             capped at --max-ind-range=10,000,000 (54,184,588 rows), d = 64, bottom
//             13-512-256-64, top 415-512-512-256-1, one index per lookup (batch 2048, lr 0.1
//             there): 3,468,575,809 parameters, 13.9 GB of fp32 weights.
// Term-by-term derivations are in docs/workloads.md. Large presets allocate their tables only
// when selected. The default is `benchmark` at batch 100: the shape of the Facebook study's
// recommendation row (Table 1: FC layers of 1-10 M parameters, here 2.5 M; embedding tables
// far larger than any cache, here 2.05 GB, over 60x this VM's 32 MiB L3 and 4x the 480 MiB an
// Intel VM reports, while a 24 GiB machine still holds them with room for training; more than
// 10 lookups per bag, here up to 100; batch at the top of its typical 1-100, where the FC
// layers reach the study's 200 ops per weight). `small` (90 parameters) is the reference
// script's command-line default.
#include "plumb/workloads/inference/dlrm.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "plumb/core/errors.h"
#include "plumb/core/layer_scope.h"

namespace plumb::workloads {
namespace {

namespace nn = torch::nn;
using torch::indexing::Slice;

struct DlrmArch {
  std::vector<int64_t> rows;    // per table, before --max-ind-range
  int64_t dim = 0;              // embedding dimension = bottom MLP output
  std::vector<int64_t> bottom;  // dense features first
  std::vector<int64_t> top;     // after the interaction width, ending in 1
  int64_t pooling = 1;          // indices per lookup (maximum when not fixed)
  bool pooling_fixed = true;
  int64_t max_ind_range = 0;  // 0: no cap
};

DlrmArch preset_arch(const std::string& preset) {
  DlrmArch a;
  if (preset == "small") {
    // dlrm_s_pytorch.py argument defaults: --arch-embedding-size 4-3-2,
    // --arch-sparse-feature-size 2, --arch-mlp-bot 4-3-2, --arch-mlp-top 4-2-1,
    // --num-indices-per-lookup 10 (not fixed).
    a = {{4, 3, 2}, 2, {4, 3, 2}, {4, 2, 1}, 10, false, 0};
  } else if (preset == "benchmark") {
    a = {
        std::vector<int64_t>(8, 1000000), 64, {512, 512, 64}, {1024, 1024, 1024, 1}, 100, false, 0};
  } else if (preset == "kaggle") {
    // Criteo Kaggle (Display Advertising Challenge) categorical cardinalities C1..C26.
    a = {{1460,  583,  10131227, 2202608, 305, 24,     12517,   633,   3,
          93145, 5683, 8351593,  3194,    27,  14992,  5461306, 10,    5652,
          2173,  4,    7046547,  18,      15,  286181, 105,     142572},
         16,
         {13, 512, 256, 64, 16},
         {512, 256, 1},
         1,
         true,
         0};
  } else if (preset == "terabyte") {
    // Criteo Terabyte (24 days) categorical cardinalities C1..C26.
    a = {{227605432, 39060,     17295,    7424,      20265,  3,     7122, 1543, 63,
          130229467, 3067956,   405282,   10,        2209,   11938, 155,  4,    976,
          14,        292775614, 40790948, 187188510, 590152, 12973, 108,  36},
         64,
         {13, 512, 256, 64},
         {512, 512, 256, 1},
         1,
         true,
         10000000};
  } else {
    PLUMB_ASSERT(false, "unknown dlrm preset");
  }
  return a;
}

// The reference's create_mlp: Linear layers with ReLU after each, except a sigmoid after the
// layer at index `sigmoid_layer` (-1: none). Module indices match nn.Sequential's there
// ("bot_l.0" = first Linear, "bot_l.1" = its ReLU ...).
nn::Sequential make_mlp(const std::vector<int64_t>& widths, int64_t sigmoid_layer) {
  nn::Sequential seq;
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i + 1 < widths.size(); ++i) {
    const int64_t in = widths[i], out = widths[i + 1];
    nn::Linear linear(in, out);
    linear->weight.normal_(0.0, std::sqrt(2.0 / static_cast<double>(in + out)));
    linear->bias.normal_(0.0, std::sqrt(1.0 / static_cast<double>(out)));
    seq->push_back(linear);
    if (static_cast<int64_t>(i) == sigmoid_layer)
      seq->push_back(nn::Sigmoid());
    else
      seq->push_back(nn::ReLU());
  }
  return seq;
}

torch::Tensor run_sequential(const std::string& path, nn::Sequential& seq, torch::Tensor x) {
  size_t i = 0;
  for (auto& layer : *seq) {
    LayerScope scope(path + "." + std::to_string(i++));
    x = scope.output(layer.forward(x));
  }
  return x;
}

struct DlrmImpl : nn::Module {
  explicit DlrmImpl(const DlrmArch& arch) {
    const int64_t features = static_cast<int64_t>(arch.rows.size()) + 1;  // tables + dense
    interactions_ = features * (features - 1) / 2 + arch.dim;
    std::vector<int64_t> top = {interactions_};
    top.insert(top.end(), arch.top.begin(), arch.top.end());
    bot_l = register_module("bot_l", make_mlp(arch.bottom, -1));
    top_l = register_module("top_l", make_mlp(top, static_cast<int64_t>(top.size()) - 2));
    emb_l = register_module("emb_l", nn::ModuleList());
    torch::NoGradGuard no_grad;
    for (int64_t n : arch.rows) {
      nn::EmbeddingBag bag(nn::EmbeddingBagOptions(n, arch.dim).mode(torch::kSum).sparse(true));
      const double bound = std::sqrt(1.0 / static_cast<double>(n));
      bag->weight.uniform_(-bound, bound);
      emb_l->push_back(bag);
      tables.push_back(bag);
    }
    // Strictly-lower-triangle (i > j) positions of the [F, F] interaction matrix, row-major
    // as the reference's li / lj lists.
    std::vector<int64_t> li, lj;
    for (int64_t i = 0; i < features; ++i)
      for (int64_t j = 0; j < i; ++j) {
        li.push_back(i);
        lj.push_back(j);
      }
    tril_i = register_buffer("tril_i", torch::tensor(li, torch::kLong));
    tril_j = register_buffer("tril_j", torch::tensor(lj, torch::kLong));
  }

  // dense: [B, dense]; indices[k] / offsets[k]: table k's flat indices and bag starts [B].
  // Returns click probabilities [B, 1].
  torch::Tensor forward(const torch::Tensor& dense, const std::vector<torch::Tensor>& indices,
                        const std::vector<torch::Tensor>& offsets) {
    auto x = run_sequential("bot_l", bot_l, dense);  // [B, d]
    std::vector<torch::Tensor> features = {x};
    for (size_t k = 0; k < tables.size(); ++k) {
      LayerScope scope("emb_l." + std::to_string(k));
      features.push_back(scope.output(tables[k]->forward(indices[k], offsets[k])));  // [B, d]
    }
    torch::Tensor z;
    {
      LayerScope scope("interaction");
      const int64_t batch = x.size(0);
      auto t = torch::cat(features, 1).view({batch, -1, x.size(1)});  // [B, F, d]
      auto products = torch::bmm(t, t.transpose(1, 2));               // [B, F, F]
      auto pairs = products.index({Slice(), tril_i, tril_j});         // [B, F(F-1)/2]
      z = scope.output(torch::cat({x, pairs}, 1));                    // [B, d + F(F-1)/2]
    }
    return run_sequential("top_l", top_l, z);  // [B, 1]
  }

  int64_t interactions_ = 0;
  nn::Sequential bot_l{nullptr}, top_l{nullptr};
  nn::ModuleList emb_l{nullptr};
  std::vector<nn::EmbeddingBag> tables;
  torch::Tensor tril_i, tril_j;
};
TORCH_MODULE(Dlrm);

// Batch layout: tensors[0] = dense features [B, dense] (float), tensors[1] = labels [B, 1]
// (float 0/1), then per table k: tensors[2 + 2k] = indices [sum of bag sizes] (int64) and
// tensors[3 + 2k] = offsets [B] (int64), the reference's lS_i / lS_o. One unit per sample.
class DlrmModel : public Model {
 public:
  DlrmModel(const Config& c, const DlrmArch& arch, const torch::Device& device)
      : arch_(arch),
        net_(arch),
        batch_(c.get_int("batch")),
        zipf_(c.get_string("index_distribution") == "zipf"),
        zipf_exponent_(c.get_double("zipf_exponent")),
        device_(device) {
    net_->to(device);
    optimizer_ = std::make_unique<torch::optim::SGD>(net_->parameters(),
                                                     torch::optim::SGDOptions(c.get_double("lr")));
  }

  nn::Module& module() override { return *net_; }

  Batch make_batch() override { return batch_of(batch_); }
  std::optional<Batch> make_batch_of(int64_t examples) override { return batch_of(examples); }

  // Samples B = `examples`.
  Batch batch_of(int64_t examples) {
    Batch b;
    // Criteo's 13 integer features are heavy-tailed counts (many zero), fed as log(1 + x)
    // (the reference's Criteo loader); counts here are floor(exp(N(0, 2))).
    auto counts = torch::randn({examples, arch_.bottom[0]}).mul_(2.0).exp_().floor_();
    b.tensors.push_back(counts.log1p_().to(device_));
    // Click labels; about a quarter positive as in Criteo Kaggle.
    b.tensors.push_back(torch::bernoulli(torch::full({examples, 1}, 0.25)).to(device_));
    for (int64_t rows : arch_.rows) {
      auto [indices, offsets] = lookups(rows, examples);
      b.tensors.push_back(indices.to(device_));
      b.tensors.push_back(offsets.to(device_));
    }
    b.units = static_cast<double>(examples);
    return b;
  }

  double train_step(const Batch& batch) override {
    {
      LayerScope scope("optimizer");
      optimizer_->zero_grad();
    }
    auto p = forward(batch);  // [B, 1]
    torch::Tensor loss;
    {
      LayerScope scope("loss");
      loss = scope.output(torch::binary_cross_entropy(p, batch.tensors[1]));
    }
    loss.backward();
    {
      LayerScope scope("optimizer");
      optimizer_->step();  // sparse rows for the tables, dense for the MLPs
    }
    return loss.item<double>();
  }

  double infer_step(const Batch& batch) override { return forward(batch).sum().item<double>(); }
  torch::Tensor infer_output(const Batch& batch) override { return forward(batch); }

 private:
  torch::Tensor forward(const Batch& batch) {
    std::vector<torch::Tensor> indices, offsets;
    for (size_t k = 0; k < arch_.rows.size(); ++k) {
      indices.push_back(batch.tensors[2 + 2 * k]);
      offsets.push_back(batch.tensors[3 + 2 * k]);
    }
    return net_->forward(batch.tensors[0], indices, offsets);
  }

  // One table's multi-hot lookups for the batch: (indices [total], offsets [B]).
  std::pair<torch::Tensor, torch::Tensor> lookups(int64_t rows, int64_t batch) const {
    torch::Tensor sizes;  // [B] bag sizes
    if (arch_.pooling_fixed) {
      sizes = torch::full({batch}, arch_.pooling, torch::kLong);
    } else {
      // The reference's random generator: round(max(1, u * min(rows, pooling))).
      const double most = static_cast<double>(std::min(rows, arch_.pooling));
      sizes =
          torch::rand({batch}, torch::kDouble).mul_(most).clamp_min_(1.0).round_().to(torch::kLong);
    }
    auto offsets = torch::cumsum(sizes, 0) - sizes;  // exclusive prefix sum
    const int64_t total = sizes.sum().item<int64_t>();
    return {zipf_ ? zipf_indices(total, rows) : torch::randint(0, rows, {total}, torch::kLong),
            offsets};
  }

  // Power-law popularity over a table's rows, drawn per lookup: rank k in [1, rows] with
  // P(k) ~ k^-s (continuous inverse-CDF approximation of the bounded Zipf law), then mapped to
  // a row by a multiplicative hash so hot rows are scattered over the table as hashed IDs
  // are (a bijection: the multiplier is a prime larger than any table).
  torch::Tensor zipf_indices(int64_t count, int64_t rows) const {
    constexpr int64_t kScatter = 2654435761;  // prime
    const double s = zipf_exponent_, n1 = static_cast<double>(rows) + 1.0;
    auto u = torch::rand({count}, torch::kDouble);
    torch::Tensor k;
    if (std::abs(s - 1.0) < 1e-9) {
      k = u.mul_(std::log(n1)).exp_();
    } else {
      const double top = std::pow(n1, 1.0 - s) - 1.0;
      k = u.mul_(top).add_(1.0).pow_(1.0 / (1.0 - s));
    }
    auto rank = k.floor_().clamp_(1.0, static_cast<double>(rows)).to(torch::kLong).sub_(1);
    return rank.mul_(kScatter).remainder_(rows);
  }

  DlrmArch arch_;  // resolved: rows already capped
  Dlrm net_;
  int64_t batch_;
  bool zipf_;
  double zipf_exponent_;
  torch::Device device_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
};

// The preset's architecture with the config's overrides applied.
DlrmArch resolve_arch(const Config& c) {
  DlrmArch a = preset_arch(c.get_string("preset"));
  if (c.get_int("max_ind_range") > 0) a.max_ind_range = c.get_int("max_ind_range");
  if (a.max_ind_range > 0)
    for (auto& rows : a.rows) rows = std::min(rows, a.max_ind_range);
  if (c.get_int("pooling") > 0) a.pooling = c.get_int("pooling");
  const auto& mode = c.get_string("pooling_mode");
  if (mode != "preset") a.pooling_fixed = mode == "fixed";
  return a;
}

}  // namespace

Workload make_dlrm() {
  Workload w;
  w.info.name = "dlrm";
  w.info.suites = {"inference"};
  w.info.domain = "recommendation (click-through rate)";
  w.info.description =
      "DLRM: bottom MLP over dense features, one sum-pooled EmbeddingBag per sparse feature "
      "(multi-hot, sparse gradients), pairwise dot interaction, top MLP + sigmoid; presets "
      "benchmark (default: 2.5M FC parameters, 2 GB of tables), small (reference defaults), "
      "kaggle, terabyte";
  w.info.source =
      "Naumov et al., Deep Learning Recommendation Model for Personalization and Recommendation "
      "Systems, 2019 (reference dlrm_s_pytorch.py: defaults, BCE, SGD 0.01; bench/ scripts for "
      "the benchmark, Criteo Kaggle and Terabyte models); Park et al., Deep Learning Inference "
      "in Facebook Data Centers, 2018";
  w.info.throughput_unit = "samples/s";
  w.info.small_batch = 128;
  w.info.tiny_config = {"batch=16", "preset=small"};
  w.default_config = [] {
    Config c;
    c.add_int("batch", 100,
              "mini-batch size (the top of the Facebook study's typical 1-100; reference "
              "default --mini-batch-size=1; its scripts: benchmark 2048, kaggle 128, terabyte "
              "2048)");
    c.add_choice("preset", "benchmark", {"small", "benchmark", "kaggle", "terabyte"},
                 "architecture: benchmark = bench/dlrm_s_benchmark.sh (514M params, 2.1 GB: "
                 "FCs of 2.5M params, tables far beyond the caches, as the Facebook study's "
                 "recommendation models); small = dlrm_s_pytorch.py defaults (90 params); kaggle = "
                 "bench/dlrm_s_criteo_kaggle.sh (541M, 2.2 GB); terabyte = "
                 "bench/dlrm_s_criteo_terabyte.sh (3.47G params, 13.9 GB)");
    c.add_int("max_ind_range", 0,
              "cap on rows per table (reference --max-ind-range); 0 = the preset's (terabyte: "
              "10,000,000, others: none)",
              0);
    c.add_int("pooling", 0,
              "indices per lookup (reference --num-indices-per-lookup); 0 = the preset's "
              "(small 10, benchmark 100, Criteo presets 1: one-hot)",
              0);
    c.add_choice("pooling_mode", "preset", {"preset", "fixed", "uniform"},
                 "bag sizes: fixed = exactly `pooling` (--num-indices-per-lookup-fixed); uniform "
                 "= round(max(1, u * min(rows, pooling))) per bag as the reference's random "
                 "generator; preset = uniform for small/benchmark, fixed for the Criteo presets");
    c.add_choice("index_distribution", "uniform", {"uniform", "zipf"},
                 "row popularity within a table, drawn per lookup: uniform (reference random "
                 "data) or zipf (power law, hot rows hashed across the table)");
    c.add_double("zipf_exponent", 1.05,
                 "exponent s of P(rank k) ~ k^-s for index_distribution=zipf (no published "
                 "value; 1.05 is a mild Zipf skew)");
    c.add_double("lr", 0.01, "SGD learning rate (reference default; its Criteo scripts: 0.1)");
    return c;
  };
  w.build = [](const Config& c, const torch::Device& device) -> std::unique_ptr<Model> {
    DlrmArch arch = resolve_arch(c);
    if (arch.bottom.back() != arch.dim)
      throw UsageError("dlrm: bottom MLP output must equal the embedding dimension");
    return std::make_unique<DlrmModel>(c, arch, device);
  };
  return w;
}

}  // namespace plumb::workloads
