// The shared decoder-only transformer: its blocks, the network and the helpers its workloads
// share (see decoder_lm.h; the Model around it is in decoder_lm_model.cpp).
#include "plumb/workloads/llm/decoder_lm.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <ATen/autocast_mode.h>
#include <c10/core/InferenceMode.h>

#include "plumb/core/errors.h"
#include "plumb/core/layer_scope.h"
#include "plumb/workloads/common/clipped_update.h"
#include "plumb/workloads/common/parallel_normal.h"

namespace plumb::workloads {
namespace {

namespace nn = torch::nn;
namespace F = torch::nn::functional;

}  // namespace

DecoderSpec llama_style_spec() {
  DecoderSpec s;
  s.rms_norm = true;
  s.norm_eps = 1e-5;
  s.rotary = true;
  s.rope_theta = 10000;
  s.swiglu = true;
  s.bias = false;
  s.tied = false;
  s.dropout = 0;
  s.init_std = 0.02;
  return s;
}

TransformerShape decoder_shape(const DecoderSpec& s) {
  TransformerShape shape;
  shape.layers = s.layers;
  shape.d_model = s.d_model;
  shape.heads = s.heads;
  shape.kv_heads = s.kv_heads;
  shape.head_dim = s.head_dim();
  shape.ffn = s.ffn;
  shape.vocab = s.vocab;
  shape.max_positions = s.context;
  shape.gated_mlp = s.swiglu;
  shape.linear_bias = s.bias;
  shape.layer_norm = !s.rms_norm;
  shape.learned_positions = !s.rotary;
  shape.tied_embedding = s.tied;
  shape.causal = true;
  return shape;
}

void check_decoder_dims(const std::string& workload, const DecoderSpec& s) {
  if (s.d_model % s.heads != 0)
    throw UsageError(workload + ": d_model " + std::to_string(s.d_model) +
                     " is not a multiple of heads " + std::to_string(s.heads));
  if (s.kv_heads > s.heads || s.heads % s.kv_heads != 0)
    throw UsageError(workload + ": heads " + std::to_string(s.heads) +
                     " is not a multiple of kv_heads " + std::to_string(s.kv_heads));
  if (s.rotary && s.head_dim() % 2 != 0)
    throw UsageError(workload + ": rotary positions need an even head size (d_model / heads = " +
                     std::to_string(s.head_dim()) + ")");
}

std::unique_ptr<torch::optim::AdamW> make_lm_adamw(const std::vector<torch::Tensor>& parameters,
                                                   const AdamWSettings& a) {
  const auto options = torch::optim::AdamWOptions(a.lr)
                           .betas({a.beta1, a.beta2})
                           .eps(a.eps)
                           .weight_decay(a.weight_decay);
  std::vector<torch::Tensor> decayed, plain;
  for (const auto& p : parameters) (p.dim() >= 2 ? decayed : plain).push_back(p);
  auto no_decay = std::make_unique<torch::optim::AdamWOptions>(options);
  no_decay->weight_decay(0.0);
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(decayed, std::make_unique<torch::optim::AdamWOptions>(options));
  groups.emplace_back(plain, std::move(no_decay));
  return std::make_unique<torch::optim::AdamW>(std::move(groups), options);
}

void add_adamw_keys(Config& c, const AdamWSettings& d, const std::string& source) {
  c.add_double("beta1", d.beta1, "AdamW beta1 (" + source + ")");
  c.add_double("beta2", d.beta2, "AdamW beta2 (" + source + ")");
  c.add_double("eps", d.eps, "AdamW epsilon (" + source + ")");
  c.add_double("weight_decay", d.weight_decay,
               "AdamW decoupled weight decay on matrices and embeddings, none on biases and norm "
               "weights (" +
                   source + ")");
  c.add_double("clip_norm", d.clip_norm,
               "gradients clipped to this global L2 norm, 0 = none (" + source + ")");
}

AdamWSettings adamw_settings(const Config& c, double lr) {
  return {lr,
          c.get_double("beta1"),
          c.get_double("beta2"),
          c.get_double("eps"),
          c.get_double("weight_decay"),
          c.get_double("clip_norm")};
}

int64_t preset_or(const Config& c, const std::string& key, int64_t preset_value) {
  const int64_t value = c.get_int(key);
  return value > 0 ? value : preset_value;
}

double preset_or(const Config& c, const std::string& key, double preset_value) {
  const double value = c.get_double(key);
  return value > 0 ? value : preset_value;
}

void lm_update(torch::optim::AdamW& optimizer, const std::vector<torch::Tensor>& parameters,
               const AdamWSettings& settings, const torch::Tensor& loss) {
  loss.backward();
  if (settings.clip_norm > 0) {
    clipped_update(optimizer, parameters, settings.clip_norm);
  } else {
    LayerScope scope("optimizer");
    optimizer.step();
  }
}

void add_lm_size_keys(Config& c, int64_t batch, const std::string& batch_doc, int64_t seq_cap,
                      const std::string& seq_doc) {
  c.add_int("batch", batch, batch_doc);
  c.add_int("prompt", 128,
            "inference: prompt tokens per request, run in one prefill (vLLM's and llama-bench's "
            "usual 128)");
  c.add_int("gen", 64,
            "inference: output tokens per request, the first from the prefill, then gen - 1 "
            "decode iterations with the KV cache (greedy)");
  c.add_int("seq", 0,
            seq_doc + ", 0 = the model's context up to " + std::to_string(seq_cap) + " tokens", 0);
}

LmSizes lm_sizes(const Config& c, int64_t context, int64_t seq_cap) {
  const int64_t seq = c.get_int("seq");
  return {c.get_int("batch"), c.get_int("prompt"), c.get_int("gen"),
          seq > 0 ? seq : std::min(context, seq_cap)};
}

void check_lm_context(const std::string& workload, const LmSizes& s, int64_t context,
                      const std::string& context_text) {
  if (s.prompt + s.gen > context)
    throw UsageError(workload + ": prompt " + std::to_string(s.prompt) + " + gen " +
                     std::to_string(s.gen) + " = " + std::to_string(s.prompt + s.gen) +
                     " positions exceed " + context_text + "; lower prompt or gen");
  if (s.seq > context)
    throw UsageError(workload + ": seq " + std::to_string(s.seq) + " exceeds " + context_text +
                     "; lower seq");
}

torch::Tensor grouped_attention(const torch::Tensor& q, const torch::Tensor& k,
                                const torch::Tensor& v, int64_t start, bool causal, double dropout,
                                bool training, const torch::Tensor& masked) {
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), hd = q.size(3);
  const int64_t KV = k.size(1), S = k.size(2), G = H / KV;
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
  // Consecutive query heads share a key/value head: [B, KV, G T, hd].
  auto grouped = (q * scale).reshape({B, KV, G * T, hd});
  auto scores = torch::matmul(grouped, k.transpose(2, 3));  // [B, KV, G T, S]
  if (causal && T > 1) {  // one new token sees every cached position
    // Key j is in the future of query i when j > start + i.
    auto future = torch::ones({T, S}, torch::TensorOptions().dtype(torch::kBool).device(q.device()))
                      .triu(start + 1);  // [T, S]
    scores = scores.view({B, KV, G, T, S})
                 .masked_fill(future, -std::numeric_limits<double>::infinity())
                 .view({B, KV, G * T, S});
  }
  if (masked.defined())  // [B, 1, 1, S]: each row's keys beyond its own position
    scores = scores.masked_fill(masked, -std::numeric_limits<double>::infinity());
  auto weights = torch::softmax(scores, -1);  // [B, KV, G T, S]
  if (dropout > 0 && training)
    weights = F::dropout(weights, F::DropoutFuncOptions().p(dropout).training(true));
  auto context = torch::matmul(weights, v);                                    // [B, KV, G T, hd]
  return context.view({B, H, T, hd}).transpose(1, 2).reshape({B, T, H * hd});  // [B, T, H hd]
}

namespace {

// x [.., I] @ weight [O, I]^T (+ bias [O]) -> [.., O]. A single fp32 row on the CPU (a decode
// token at batch 1) is run as a matrix-vector product: LibTorch 1.13 sends a one-row F::linear
// to OpenBLAS's sgemm with M = 1, which streams the weights at well under half the DRAM
// bandwidth where sgemv (addmv) streams them near it (bench/linear_gemv.py, docs/llm.md): the
// product a decode token is bound by. Not under autocast, which bf16 and the int8 quantizer
// both run under: bf16 autocast leaves addmv in fp32, and the quantizer's kernels serve
// linear, addmm and matmul.
// Every other product is aten::linear, not the C++ frontend's F::linear: F::linear multiplies
// by weight.t(), a view, and CPU autocast caches only the bf16 copy of a weight that is not a
// view, so under bf16 it cast every weight again at every call (a decode token read the fp32
// weights and wrote their bf16 copies before reading those). aten::linear hands autocast the
// weight itself.
torch::Tensor decoder_linear(const torch::Tensor& x, const torch::Tensor& weight,
                             const torch::Tensor& bias) {
  const bool one_row = x.numel() == x.size(-1);
  if (!one_row || !x.is_cpu() || x.scalar_type() != torch::kFloat ||
      weight.scalar_type() != torch::kFloat || at::autocast::is_cpu_enabled())
    return torch::linear(x, weight,
                         bias.defined() ? c10::optional<torch::Tensor>(bias) : c10::nullopt);
  auto shape = x.sizes().vec();
  shape.back() = weight.size(0);
  const auto row = x.reshape({-1});                                                    // [I]
  auto y = bias.defined() ? torch::addmv(bias, weight, row) : torch::mv(weight, row);  // [O]
  return y.view(shape);                                                                // [.., O]
}

// A projection of the decoder as the named layer (run_layer for nn::Linear, through
// decoder_linear).
torch::Tensor run_projection(const std::string& name, nn::Linear& linear, const torch::Tensor& x) {
  LayerScope scope(name);
  return scope.output(decoder_linear(x, linear->weight, linear->bias));
}

}  // namespace

torch::nn::Linear normal_linear(int64_t in, int64_t out, bool bias, double std) {
  // Built 1 x 1 and then given its real weight: nn::Linear's constructor would otherwise draw
  // a Kaiming-uniform weight on one thread only for it to be overwritten (seconds per build of
  // a billion-weight model). set_data swaps the tensor behind the registered parameter.
  nn::Linear linear(nn::LinearOptions(1, 1).bias(bias));
  linear->options = nn::LinearOptions(in, out).bias(bias);
  torch::NoGradGuard no_grad;
  auto weight = torch::empty({out, in});  // [O, I]
  fill_normal_parallel(weight, std);
  linear->weight.set_data(weight);
  if (bias) linear->bias.set_data(torch::zeros({out}));  // [O]
  return linear;
}

LmNormImpl::LmNormImpl(int64_t dim, bool rms_, double eps_) : rms(rms_), eps(eps_) {
  weight = register_parameter("weight", torch::ones({dim}));
  if (!rms) bias = register_parameter("bias", torch::zeros({dim}));
}

torch::Tensor LmNormImpl::forward(const torch::Tensor& x) {
  // LibTorch 1.13's CPU autocast leaves layer_norm out, and its kernel takes one dtype: a bf16
  // input (an autocast projection's output) is normalised in the weights' dtype, as CUDA
  // autocast's fp32 policy for layer_norm does.
  if (!rms)
    return F::layer_norm(x.to(weight.scalar_type()),
                         F::LayerNormFuncOptions({x.size(-1)}).weight(weight).bias(bias).eps(eps));
  // As Llama's reference: the mean square in fp32, the result back in the input's dtype.
  auto x32 = x.to(torch::kFloat);
  auto normed = x32 * torch::rsqrt(x32.pow(2).mean(-1, true) + eps);
  return weight * normed.to(x.scalar_type());
}

int64_t KvCache::bytes() const {
  int64_t total = 0;
  for (const auto& l : layers)
    if (l.k.defined()) total += (l.k.numel() + l.v.numel()) * l.k.element_size();
  return total;
}

namespace {

// Rotary positions, the "rotate half" form (Hugging Face's Llama; Meta's interleaved pairs are
// the same map after permuting each head's features): x [B, heads, T, hd] at positions
// start .. start + T - 1 of the tables [positions, hd / 2], or, for a ragged decode (T = 1),
// row b at positions[b].
torch::Tensor apply_rotary(const torch::Tensor& x, const torch::Tensor& cos_table,
                           const torch::Tensor& sin_table, const KvPlace& place) {
  const int64_t B = x.size(0), T = x.size(2), half = x.size(3) / 2;
  torch::Tensor cos, sin;  // [T, hd / 2], or [B, 1, 1, hd / 2] per row
  if (place.positions.defined()) {
    cos = cos_table.index_select(0, place.positions).to(x.scalar_type()).view({B, 1, 1, half});
    sin = sin_table.index_select(0, place.positions).to(x.scalar_type()).view({B, 1, 1, half});
  } else {
    cos = cos_table.narrow(0, place.start, T).to(x.scalar_type());
    sin = sin_table.narrow(0, place.start, T).to(x.scalar_type());
  }
  auto x1 = x.narrow(3, 0, half), x2 = x.narrow(3, half, half);
  return torch::cat({x1 * cos - x2 * sin, x2 * cos + x1 * sin}, 3);  // [B, heads, T, hd]
}

struct LmAttentionImpl : nn::Module {
  explicit LmAttentionImpl(const DecoderSpec& s) {
    const int64_t hd = s.head_dim();
    const double out_std = s.scale_residual_init
                               ? s.init_std / std::sqrt(2.0 * static_cast<double>(s.layers))
                               : s.init_std;
    q_proj = register_module("q_proj", normal_linear(s.d_model, s.heads * hd, s.bias, s.init_std));
    k_proj =
        register_module("k_proj", normal_linear(s.d_model, s.kv_heads * hd, s.bias, s.init_std));
    v_proj =
        register_module("v_proj", normal_linear(s.d_model, s.kv_heads * hd, s.bias, s.init_std));
    o_proj = register_module("o_proj", normal_linear(s.heads * hd, s.d_model, s.bias, out_std));
  }
  nn::Linear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, o_proj{nullptr};
};
TORCH_MODULE(LmAttention);

struct LmMlpImpl : nn::Module {
  explicit LmMlpImpl(const DecoderSpec& s) {
    const double out_std = s.scale_residual_init
                               ? s.init_std / std::sqrt(2.0 * static_cast<double>(s.layers))
                               : s.init_std;
    if (s.swiglu)
      gate_proj = register_module("gate_proj", normal_linear(s.d_model, s.ffn, s.bias, s.init_std));
    up_proj = register_module("up_proj", normal_linear(s.d_model, s.ffn, s.bias, s.init_std));
    down_proj = register_module("down_proj", normal_linear(s.ffn, s.d_model, s.bias, out_std));
  }
  nn::Linear gate_proj{nullptr}, up_proj{nullptr}, down_proj{nullptr};
};
TORCH_MODULE(LmMlp);

struct DecoderBlockImpl : nn::Module {
  explicit DecoderBlockImpl(const DecoderSpec& s)
      : spec(s),
        attn_norm(register_module("attn_norm", LmNorm(s.d_model, s.rms_norm, s.norm_eps))),
        attn(register_module("attn", LmAttention(s))),
        mlp_norm(register_module("mlp_norm", LmNorm(s.d_model, s.rms_norm, s.norm_eps))),
        mlp(register_module("mlp", LmMlp(s))) {}

  // [B, H(or KV), T, hd] from projections [B, T, heads hd].
  static torch::Tensor heads_first(const torch::Tensor& x, int64_t heads) {
    return x.view({x.size(0), x.size(1), heads, x.size(2) / heads}).transpose(1, 2);
  }

  torch::Tensor dropped(const torch::Tensor& x) const {
    if (spec.dropout <= 0 || !is_training()) return x;
    return F::dropout(x, F::DropoutFuncOptions().p(spec.dropout).training(true));
  }

  // Writes this layer's keys and values k, v [B, KV, T, hd] into the cache rows of `place` and
  // returns the keys and values attention reads there, in place: [B, KV, S, hd] each.
  std::pair<torch::Tensor, torch::Tensor> cached(LayerKv& kv, const torch::Tensor& k,
                                                 const torch::Tensor& v, const KvPlace& place) {
    const int64_t B = k.size(0), T = k.size(2);
    if (place.allocate) {  // a generation's prefill: the cache sized for the whole generation
      const std::vector<int64_t> sizes = {B, spec.kv_heads, place.cache->capacity, spec.head_dim()};
      if (!kv.k.defined() || kv.k.sizes() != sizes || kv.k.scalar_type() != k.scalar_type() ||
          kv.k.device() != k.device()) {
        kv.k = torch::empty(sizes, k.options());
        kv.v = torch::empty(sizes, v.options());
      }
    }
    // The rows written: the whole cache for a uniform batch as large as it (no view taken).
    const bool whole = place.row == 0 && kv.k.size(0) == B;
    auto k_rows = whole ? kv.k : kv.k.narrow(0, place.row, B);  // [B, KV, capacity, hd]
    auto v_rows = whole ? kv.v : kv.v.narrow(0, place.row, B);
    if (place.positions.defined()) {  // ragged decode: row b's one key at positions[b]
      auto index = place.positions.view({B, 1, 1, 1}).expand_as(k);  // [B, KV, 1, hd]
      k_rows.scatter_(2, index, k.to(k_rows.scalar_type()));
      v_rows.scatter_(2, index, v.to(v_rows.scalar_type()));
      return {k_rows.narrow(2, 0, place.keys), v_rows.narrow(2, 0, place.keys)};
    }
    k_rows.narrow(2, place.start, T).copy_(k);
    v_rows.narrow(2, place.start, T).copy_(v);
    return {k_rows.narrow(2, 0, place.start + T),  // [B, KV, start + T, hd]
            v_rows.narrow(2, 0, place.start + T)};
  }

  // x: [B, T, D] placed as `place` says; `kv`: this layer's cache, or nullptr; `masked`: a
  // ragged decode's keys beyond each row's position [B, 1, 1, S], else undefined.
  torch::Tensor forward(const std::string& path, torch::Tensor x, const KvPlace& place,
                        const DecoderLmImpl& net, LayerKv* kv, const torch::Tensor& masked) {
    const std::string a = path + ".attn", m = path + ".mlp";
    auto h = run_layer(path + ".attn_norm", attn_norm, x);  // [B, T, D]
    auto q =
        heads_first(run_projection(a + ".q_proj", attn->q_proj, h), spec.heads);  // [B, H, T, hd]
    auto k = heads_first(run_projection(a + ".k_proj", attn->k_proj, h),
                         spec.kv_heads);  // [B, KV, T, hd]
    auto v = heads_first(run_projection(a + ".v_proj", attn->v_proj, h), spec.kv_heads);
    torch::Tensor context;
    {
      LayerScope scope(a);
      if (spec.rotary) {
        q = apply_rotary(q, net.rope_cos, net.rope_sin, place);
        k = apply_rotary(k, net.rope_cos, net.rope_sin, place);
      }
      torch::Tensor keys = k, values = v;  // [B, KV, S, hd]
      if (kv != nullptr) std::tie(keys, values) = cached(*kv, k, v, place);
      // Without a cache the keys start at `start` too: positions are relative to them.
      context = scope.output(grouped_attention(q, keys, values, kv != nullptr ? place.start : 0,
                                               true, spec.dropout, is_training(),
                                               masked));  // [B, T, H hd]
    }
    auto out = run_projection(a + ".o_proj", attn->o_proj, context);  // [B, T, D]
    {
      LayerScope scope(a);
      x = scope.output(x + dropped(out));
    }
    h = run_layer(path + ".mlp_norm", mlp_norm, x);  // [B, T, D]
    torch::Tensor inner;
    if (spec.swiglu) {
      auto gate = run_projection(m + ".gate_proj", mlp->gate_proj, h);  // [B, T, F]
      auto up = run_projection(m + ".up_proj", mlp->up_proj, h);        // [B, T, F]
      LayerScope scope(m);
      inner = scope.output(torch::silu(gate) * up);
    } else {
      auto up = run_projection(m + ".up_proj", mlp->up_proj, h);  // [B, T, F]
      LayerScope scope(m);
      inner = scope.output(torch::gelu(up, "tanh"));  // GPT-2's tanh approximation
    }
    auto down = run_projection(m + ".down_proj", mlp->down_proj, inner);  // [B, T, D]
    LayerScope scope(m);
    return scope.output(x + dropped(down));  // [B, T, D]
  }

  DecoderSpec spec;
  LmNorm attn_norm;
  LmAttention attn;
  LmNorm mlp_norm;
  LmMlp mlp;
};
TORCH_MODULE(DecoderBlock);

// Rotary tables [positions, hd / 2] each (cos, sin): theta^(-2i / hd) for i < hd / 2, times
// the position; kept in fp32 whatever the default dtype (bf16 cannot tell positions apart
// beyond a few hundred) and cast at use.
std::pair<torch::Tensor, torch::Tensor> rotary_tables(const DecoderSpec& s, int64_t positions) {
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat);
  const int64_t hd = s.head_dim();
  auto inv_freq = torch::pow(s.rope_theta, -torch::arange(0, hd, 2, f32) / static_cast<double>(hd));
  auto angles = torch::outer(torch::arange(positions, f32), inv_freq);  // [positions, hd / 2]
  return {torch::cos(angles), torch::sin(angles)};
}

}  // namespace

DecoderLmImpl::DecoderLmImpl(const DecoderSpec& s, int64_t positions) : spec(s) {
  embed_tokens = register_module("embed_tokens", nn::Embedding(s.vocab, s.d_model));
  if (!s.rotary)
    embed_positions = register_module("embed_positions", nn::Embedding(s.context, s.d_model));
  layers = register_module("layers", nn::ModuleList());
  for (int64_t l = 0; l < s.layers; ++l) layers->push_back(DecoderBlock(s));
  norm = register_module("norm", LmNorm(s.d_model, s.rms_norm, s.norm_eps));
  if (!s.tied)
    lm_head = register_module("lm_head", normal_linear(s.d_model, s.vocab, false, s.init_std));
  torch::NoGradGuard no_grad;
  fill_normal_parallel(embed_tokens->weight, s.init_std);
  if (!s.rotary) fill_normal_parallel(embed_positions->weight, s.position_init_std);
  if (s.rotary) {
    auto [cos, sin] = rotary_tables(s, positions);
    rope_cos = register_buffer("rope_cos", cos);
    rope_sin = register_buffer("rope_sin", sin);
  }
}

void DecoderLmImpl::cover_positions(int64_t positions) {
  if (!spec.rotary || rope_cos.size(0) >= positions) return;
  // Ordinary tensors even under InferenceMode (a training step may use the tables later), set
  // into the registered buffers themselves so module moves and casts still reach them.
  c10::InferenceMode normal(false);
  torch::NoGradGuard no_grad;
  auto [cos, sin] = rotary_tables(spec, positions);
  rope_cos.set_data(cos.to(rope_cos.options()));
  rope_sin.set_data(sin.to(rope_sin.options()));
}

torch::Tensor DecoderLmImpl::hidden(const torch::Tensor& tokens, int64_t start, KvCache* cache) {
  KvPlace place;
  place.cache = cache;
  place.start = start;
  place.allocate = cache != nullptr && start == 0;
  return hidden(tokens, place);
}

torch::Tensor DecoderLmImpl::hidden(const torch::Tensor& tokens, const KvPlace& place) {
  const int64_t B = tokens.size(0), T = tokens.size(1);
  const bool ragged = place.positions.defined();
  PLUMB_ASSERT(!ragged || (T == 1 && place.cache != nullptr),
               "a ragged decode feeds one token per row into a cache");
  auto x = run_layer("embed_tokens", embed_tokens, tokens);  // [B, T, D]
  if (!spec.rotary) {
    LayerScope scope("embed_positions");
    auto positions = ragged ? place.positions.view({B, 1})  // [B, 1]
                            : torch::arange(place.start, place.start + T, tokens.options());  // [T]
    x = scope.output(x + embed_positions->forward(positions));
  }
  if (spec.dropout > 0 && is_training())
    x = F::dropout(x, F::DropoutFuncOptions().p(spec.dropout).training(true));
  // A ragged decode reads keys 0 .. keys - 1 of every row; row b sees 0 .. positions[b] only.
  torch::Tensor beyond;  // [B, 1, 1, keys] bool
  if (ragged)
    beyond = torch::arange(place.keys, place.positions.options()).view({1, 1, 1, place.keys}) >
             place.positions.view({B, 1, 1, 1});
  for (size_t l = 0; l < layers->size(); ++l)
    x = layers[l]->as<DecoderBlock>()->forward(
        "layers." + std::to_string(l), x, place, *this,
        place.cache != nullptr ? &place.cache->layers[l] : nullptr, beyond);
  return x;  // [B, T, D]
}

torch::Tensor DecoderLmImpl::logits(const torch::Tensor& hidden_states) {
  auto x = run_layer("norm", norm, hidden_states);  // [..., D]
  if (!spec.tied) return run_projection("lm_head", lm_head, x);
  LayerScope scope("lm_head");
  return scope.output(decoder_linear(x, embed_tokens->weight, torch::Tensor()));  // [..., V]
}

torch::Tensor DecoderLmImpl::sequence_logits(const torch::Tensor& tokens) {
  return logits(hidden(tokens, 0, nullptr));  // [B, T, V]
}

}  // namespace plumb::workloads
