// The Model around the decoder-only transformer (decoder_lm.h): training steps, generate()'s
// prefill and decode over one batch, and the slotted KV cache a token-level server drives
// (core/slot_generation.h): one request per cache row, each at its own position.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <ATen/autocast_mode.h>

#include "plumb/core/errors.h"
#include "plumb/core/layer_scope.h"
#include "plumb/core/slot_generation.h"
#include "plumb/workloads/llm/decoder_lm.h"

namespace plumb::workloads {
namespace {

namespace nn = torch::nn;
namespace F = torch::nn::functional;

// Batch layout: training tensors[0] = token ids [B, seq + 1] (inputs are the first seq, the
// targets the last seq); inference tensors[0] = the prompt [B, prompt]. The slots are a cache
// of their own, beside generate()'s.
class DecoderLmModel : public Model, public GenerativeModel, public SlottedGenerator {
 public:
  DecoderLmModel(const DecoderSpec& spec, const AdamWSettings& optimizer, const LmSizes& sizes,
                 const torch::Device& device)
      : net_(spec, std::max(sizes.prompt + sizes.gen, sizes.seq)),
        settings_(optimizer),
        sizes_(sizes),
        device_(device) {
    net_->to(device);
    optimizer_ = make_lm_adamw(net_->parameters(), settings_);
    cache_.layers.resize(static_cast<size_t>(spec.layers));
    slots_.layers.resize(static_cast<size_t>(spec.layers));
  }

  nn::Module& module() override { return *net_; }

  Batch make_batch() override {
    const auto ids = torch::TensorOptions().dtype(torch::kLong).device(device_);
    if (net_->is_training())
      return {{torch::randint(net_->spec.vocab, {sizes_.batch, sizes_.seq + 1}, ids)},
              static_cast<double>(sizes_.batch * sizes_.seq)};
    return {{torch::randint(net_->spec.vocab, {sizes_.batch, sizes_.prompt}, ids)},
            static_cast<double>(sizes_.batch * sizes_.gen)};
  }

  double train_step(const Batch& batch) override {
    {
      LayerScope scope("optimizer");
      optimizer_->zero_grad();
    }
    const auto& ids = batch.tensors[0];
    const int64_t T = ids.size(1) - 1;
    auto logits = net_->sequence_logits(ids.narrow(1, 0, T));  // [B, T, V]
    torch::Tensor loss;
    {
      LayerScope scope("loss");
      loss = scope.output(F::cross_entropy(logits.reshape({-1, logits.size(2)}).to(torch::kFloat),
                                           ids.narrow(1, 1, T).reshape(-1)));
    }
    lm_update(*optimizer_, net_->parameters(), settings_, loss);
    return loss.item<double>();
  }

  double infer_step(const Batch& batch) override {
    generate(*this, batch, device_);
    return last_logits_.mean().item<double>();
  }

  torch::Tensor infer_output(const Batch& batch) override {
    return generate(*this, batch, device_).tokens;  // [B, gen] int64
  }

  GenerationShape generation_shape() const override {
    return {sizes_.batch, sizes_.prompt, sizes_.gen};
  }

  // A training batch serves too: its first `prompt` tokens are the prompt.
  torch::Tensor prefill(const Batch& batch) override {
    const auto& ids = batch.tensors[0];
    auto prompt = ids.narrow(1, 0, std::min(ids.size(1), sizes_.prompt));  // [B, P]
    cache_.length = 0;
    cache_.capacity = prompt.size(1) + sizes_.gen;
    auto hidden = net_->hidden(prompt, 0, &cache_);  // [B, P, D]
    cache_.length = prompt.size(1);
    return choose(hidden.select(1, prompt.size(1) - 1));  // logits at the last position only
  }

  torch::Tensor decode(const torch::Tensor& tokens) override {
    PLUMB_ASSERT(cache_.length < cache_.capacity, "decode beyond the generation's cache");
    auto hidden = net_->hidden(tokens.view({-1, 1}), cache_.length, &cache_);  // [B, 1, D]
    ++cache_.length;
    return choose(hidden.select(1, 0));
  }

  // Also the logits of the latest prefill_slot that ended a prompt ([1, V]) or decode_slots
  // ([slots, V]).
  torch::Tensor last_logits() const override { return last_logits_; }
  int64_t kv_cache_bytes() const override { return cache_.bytes(); }

  int64_t kv_bytes_per_position() const override {
    const DecoderSpec& s = net_->spec;
    return 2 * s.layers * s.kv_heads * s.head_dim() *
           static_cast<int64_t>(c10::elementSize(cache_dtype()));
  }

  int64_t max_positions() const override { return net_->spec.context; }

  void allocate_slots(int64_t slots, int64_t positions) override {
    if (slots < 1 || positions < 1)
      throw UsageError("allocate_slots: " + std::to_string(slots) + " slots of " +
                       std::to_string(positions) + " positions; both must be at least 1");
    if (positions > max_positions())
      throw UsageError("allocate_slots: " + std::to_string(positions) +
                       " positions exceed the model's context " + std::to_string(max_positions()));
    net_->cover_positions(positions);
    const auto options = torch::TensorOptions().dtype(cache_dtype()).device(device_);
    const DecoderSpec& s = net_->spec;
    for (auto& layer : slots_.layers) {
      const bool fits =
          layer.k.defined() && layer.k.size(0) >= slots && layer.k.size(2) >= positions &&
          layer.k.scalar_type() == options.dtype().toScalarType() && layer.k.device() == device_;
      if (fits) continue;
      // Zeros, not empty: a ragged decode reads positions past a shorter row's length (hidden
      // from its softmax, but multiplied by weight 0 in the weighted sum, where a NaN from
      // uninitialised memory would survive).
      layer.k = torch::zeros({slots, s.kv_heads, positions, s.head_dim()}, options);
      layer.v = torch::zeros({slots, s.kv_heads, positions, s.head_dim()}, options);
    }
    slots_.capacity = positions;
    slot_lengths_.assign(static_cast<size_t>(slots), 0);
    slot_ready_.assign(static_cast<size_t>(slots), false);
    slot_tokens_ =
        torch::zeros({slots}, torch::TensorOptions().dtype(torch::kLong).device(device_));
  }

  void prefill_slot(int64_t slot, int64_t start, int64_t tokens, bool last) override {
    check_slot(slot);
    auto& length = slot_lengths_[static_cast<size_t>(slot)];
    if (start == 0) length = 0;
    PLUMB_ASSERT(start == length, "a slot's prompt chunks run in order");
    PLUMB_ASSERT(tokens >= 1 && start + tokens <= slots_.capacity,
                 "a prompt chunk must fit the slot's positions");
    slot_ready_[static_cast<size_t>(slot)] = false;
    KvPlace place;
    place.cache = &slots_;
    place.start = start;
    place.row = slot;
    run_in_phase(Phase::kPrefill, [&] {
      // The same draw as make_batch's for one request: re-seeding before either gives one
      // prompt, and consecutive chunks draw what one draw of their total would.
      const auto ids = torch::randint(net_->spec.vocab, {1, tokens},
                                      torch::TensorOptions().dtype(torch::kLong).device(device_));
      auto hidden = net_->hidden(ids, place);  // [1, T, D]
      if (last) slot_tokens_.narrow(0, slot, 1).copy_(choose(hidden.select(1, tokens - 1)));  // [1]
    });
    length = start + tokens;
    slot_ready_[static_cast<size_t>(slot)] = last;
  }

  void decode_slots(int64_t slots) override {
    PLUMB_ASSERT(slots >= 1 && slots <= static_cast<int64_t>(slot_lengths_.size()),
                 "decode_slots over allocated slots");
    const std::vector<int64_t> lengths(slot_lengths_.begin(), slot_lengths_.begin() + slots);
    for (int64_t i = 0; i < slots; ++i)
      PLUMB_ASSERT(
          slot_ready_[static_cast<size_t>(i)] && lengths[static_cast<size_t>(i)] < slots_.capacity,
          "a decoded slot has finished its prefill and has a position left");
    KvPlace place;
    place.cache = &slots_;
    place.keys = *std::max_element(lengths.begin(), lengths.end()) + 1;
    run_in_phase(Phase::kDecode, [&] {
      place.positions = torch::tensor(lengths, torch::kLong).to(device_);  // [n]
      auto last = slot_tokens_.narrow(0, 0, slots);                        // [n]
      auto hidden = net_->hidden(last.view({slots, 1}), place);            // [n, 1, D]
      last.copy_(choose(hidden.select(1, 0)));                             // [n]
    });
    for (int64_t i = 0; i < slots; ++i) ++slot_lengths_[static_cast<size_t>(i)];
  }

  void move_slot(int64_t from, int64_t to) override {
    check_slot(from);
    check_slot(to);
    if (from == to) return;
    const auto f = static_cast<size_t>(from), t = static_cast<size_t>(to);
    const int64_t length = slot_lengths_[f];
    if (length > 0)
      for (auto& layer : slots_.layers) {
        // [1, KV, length, hd] of each row: only the positions the request wrote.
        layer.k.narrow(0, to, 1)
            .narrow(2, 0, length)
            .copy_(layer.k.narrow(0, from, 1).narrow(2, 0, length));
        layer.v.narrow(0, to, 1)
            .narrow(2, 0, length)
            .copy_(layer.v.narrow(0, from, 1).narrow(2, 0, length));
      }
    slot_tokens_.narrow(0, to, 1).copy_(slot_tokens_.narrow(0, from, 1));
    slot_lengths_[t] = length;
    slot_ready_[t] = slot_ready_[f];
    slot_lengths_[f] = 0;
    slot_ready_[f] = false;
  }

  int64_t slot_length(int64_t slot) const override {
    check_slot(slot);
    return slot_lengths_[static_cast<size_t>(slot)];
  }

 private:
  void check_slot(int64_t slot) const {
    PLUMB_ASSERT(slot >= 0 && slot < static_cast<int64_t>(slot_lengths_.size()),
                 "a slot of the allocated cache");
  }

  // The dtype of the projected keys, which a cache keeps: a linear layer's output dtype under
  // the current autocast state, asked of a 1 x 1 product so every case agrees with the
  // projection (bf16 under a bf16 autocast session; fp32 without autocast, and under the int8
  // quantizer, whose autocast state routes linear layers to kernels with fp32 outputs).
  torch::ScalarType cache_dtype() const {
    auto one = torch::zeros({1, 1}, net_->embed_tokens->weight.options().requires_grad(false));
    return torch::linear(one, one).scalar_type();
  }

  // Greedy choice from the last hidden state [B, D]: the next token of each request [B].
  torch::Tensor choose(const torch::Tensor& last_hidden) {
    auto logits = net_->logits(last_hidden);  // [B, V]
    last_logits_ = logits.to(torch::kFloat);
    return logits.argmax(-1);
  }

  DecoderLm net_;
  AdamWSettings settings_;
  LmSizes sizes_;
  torch::Device device_;
  std::unique_ptr<torch::optim::AdamW> optimizer_;
  KvCache cache_;
  torch::Tensor last_logits_;
  KvCache slots_;                      // [slots, KV, capacity, hd] per layer
  std::vector<int64_t> slot_lengths_;  // positions written per slot
  std::vector<bool> slot_ready_;       // the slot's prompt has ended: it has a token to decode
  torch::Tensor slot_tokens_;          // [slots] int64: each slot's latest token
};

}  // namespace

std::unique_ptr<Model> make_decoder_lm_model(const DecoderSpec& spec,
                                             const AdamWSettings& optimizer, const LmSizes& sizes,
                                             const torch::Device& device) {
  return std::make_unique<DecoderLmModel>(spec, optimizer, sizes, device);
}

std::unique_ptr<Model> build_preset_decoder(const std::string& workload, const DecoderSpec& spec,
                                            const Config& c, double preset_lr, int64_t seq_cap,
                                            const torch::Device& device) {
  check_decoder_dims(workload, spec);
  const LmSizes sizes = lm_sizes(c, spec.context, seq_cap);
  check_lm_context(
      workload, sizes, spec.context,
      "the context " + std::to_string(spec.context) + " of preset " + c.get_string("preset"));
  return make_decoder_lm_model(spec, adamw_settings(c, preset_or(c, "lr", preset_lr)), sizes,
                               device);
}

}  // namespace plumb::workloads
