// The decoder's slotted KV cache (core/slot_generation.h), as a token-level server drives it:
// requests served through slots (at different positions, decoded together, prefilled in
// chunks, moved between slots) choose the same tokens, with the same logits, as each request
// generated alone by recomputing its whole sequence and by generate()'s prefill and decode;
// the cache's bytes per position at fp32 and bf16; positions beyond the context refused; each
// call's operators inside its phase's scope.
#include <gtest/gtest.h>

#include <ATen/autocast_mode.h>
#include <ATen/record_function.h>
#include <c10/core/InferenceMode.h>

#include <cstring>
#include <string>
#include <vector>

#include "plumb/core/errors.h"
#include "plumb/core/generation.h"
#include "plumb/core/slot_generation.h"
#include "plumb/workloads/llm/decoder_lm.h"

namespace plumb {
namespace {

using workloads::DecoderLmImpl;
using workloads::DecoderSpec;

constexpr int64_t kSlotVocab = 64, kSlotContext = 64;

// GPT-2's block choices: LayerNorm, learned positions, GELU, biases, tied output.
DecoderSpec slot_gpt2_spec() {
  DecoderSpec s;
  s.layers = 2;
  s.d_model = 32;
  s.heads = 4;
  s.kv_heads = 4;
  s.ffn = 64;
  s.vocab = kSlotVocab;
  s.context = kSlotContext;
  s.bias = true;
  s.tied = true;
  return s;
}

// Llama's: RMSNorm, rotary positions, SwiGLU, grouped-query attention (2 heads per KV head).
DecoderSpec slot_llama_spec() {
  DecoderSpec s = workloads::llama_style_spec();
  s.layers = 2;
  s.d_model = 32;
  s.heads = 4;
  s.kv_heads = 2;
  s.ffn = 64;
  s.vocab = kSlotVocab;
  s.context = kSlotContext;
  return s;
}

struct SlotDecoder {
  std::string name;
  std::unique_ptr<Model> model;
  DecoderLmImpl* net = nullptr;
  GenerativeModel* gen = nullptr;
  SlottedGenerator* slots = nullptr;
};

// Prompt 9 + gen 4 sizes the rotary tables to 13 positions: the requests below go beyond, so
// allocate_slots must extend them.
SlotDecoder slot_decoder(const std::string& name) {
  torch::manual_seed(7);
  const DecoderSpec spec = name == "gpt2" ? slot_gpt2_spec() : slot_llama_spec();
  SlotDecoder t;
  t.name = name;
  t.model = workloads::make_decoder_lm_model(spec, {}, {1, 9, 4, 8}, torch::Device(torch::kCPU));
  t.model->module().eval();
  t.net = dynamic_cast<DecoderLmImpl*>(&t.model->module());
  t.gen = as_generative(*t.model);
  t.slots = as_slotted(*t.model);
  EXPECT_NE(t.net, nullptr);
  EXPECT_NE(t.gen, nullptr);
  EXPECT_NE(t.slots, nullptr);
  return t;
}

// The prompt a model draws for one request of `tokens` ids after seeding with `seed`.
torch::Tensor slot_prompt_ids(uint64_t seed, int64_t tokens) {
  torch::manual_seed(seed);
  return torch::randint(kSlotVocab, {1, tokens}, torch::TensorOptions().dtype(torch::kLong));
}

// One request generated alone, greedily, recomputing its whole sequence without a cache: the
// logits [V] that chose each output token, and the tokens.
struct SlotReference {
  std::vector<torch::Tensor> logits;
  std::vector<int64_t> tokens;
};

SlotReference slot_greedy(DecoderLmImpl& net, const torch::Tensor& prompt, int64_t outputs) {
  SlotReference r;
  torch::Tensor sequence = prompt;  // [1, P + i]
  for (int64_t i = 0; i < outputs; ++i) {
    auto logits = net.sequence_logits(sequence).select(1, sequence.size(1) - 1)[0];  // [V]
    r.logits.push_back(logits);
    r.tokens.push_back(logits.argmax().item<int64_t>());
    sequence = torch::cat({sequence, torch::full({1, 1}, r.tokens.back(), sequence.options())}, 1);
  }
  return r;
}

// The slotted model's latest logits, row `row`, are the reference's output `index`: the same
// greedy token and logits within 1e-4.
void expect_slot_output(const SlotDecoder& t, int64_t row, const SlotReference& ref, size_t index,
                        const std::string& what) {
  const auto logits = t.gen->last_logits()[row];  // [V]
  EXPECT_EQ(logits.argmax().item<int64_t>(), ref.tokens[index]) << t.name << " " << what;
  EXPECT_LT((logits - ref.logits[index]).abs().max().item<double>(), 1e-4) << t.name << " " << what;
}

TEST(SlottedGeneration, RequestsAtDifferentPositionsDecodeAsEachAlone) {
  for (const std::string name : {"gpt2", "llama"}) {
    SlotDecoder t = slot_decoder(name);
    c10::InferenceMode guard;
    const int64_t kDecodes = 6;
    // Slots of 32 positions: the rotary tables (13 positions) are extended to cover them, which
    // the references' longer sequences need too.
    t.slots->allocate_slots(3, 32);
    if (name == "llama") {
      EXPECT_EQ(t.net->rope_cos.size(0), 32);
    }
    const SlotReference first = slot_greedy(*t.net, slot_prompt_ids(11, 5), kDecodes + 1);
    const SlotReference second = slot_greedy(*t.net, slot_prompt_ids(12, 9), kDecodes + 1);
    // generate()'s path agrees with the recomputed reference on the first request.
    t.gen->prefill(Batch{{slot_prompt_ids(11, 5)}, 4});
    expect_slot_output(t, 0, first, 0, "uniform prefill");
    torch::Tensor token = torch::full({1}, first.tokens[0], torch::kLong);
    for (size_t i = 1; i < 4; ++i) {
      t.gen->decode(token);
      expect_slot_output(t, 0, first, i, "uniform decode " + std::to_string(i));
      token.fill_(first.tokens[i]);
    }

    // Slot 0 first holds a longer request, whose keys stay past the next request's positions
    // there: a ragged decode must hide them.
    torch::manual_seed(99);
    t.slots->prefill_slot(0, 0, 12, true);
    torch::manual_seed(11);
    t.slots->prefill_slot(0, 0, 5, true);
    expect_slot_output(t, 0, first, 0, "prefill slot 0");
    torch::manual_seed(12);
    t.slots->prefill_slot(1, 0, 9, true);
    expect_slot_output(t, 0, second, 0, "prefill slot 1");
    for (int64_t i = 1; i <= kDecodes; ++i) {
      t.slots->decode_slots(2);
      ASSERT_EQ(t.gen->last_logits().sizes(), (std::vector<int64_t>{2, kSlotVocab}));
      expect_slot_output(t, 0, first, static_cast<size_t>(i), "slot 0 decode " + std::to_string(i));
      expect_slot_output(t, 1, second, static_cast<size_t>(i),
                         "slot 1 decode " + std::to_string(i));
      EXPECT_EQ(t.slots->slot_length(0), 5 + i);
      EXPECT_EQ(t.slots->slot_length(1), 9 + i);
    }
  }
}

TEST(SlottedGeneration, APromptInChunksIsThePromptWhole) {
  for (const std::string name : {"gpt2", "llama"}) {
    SlotDecoder t = slot_decoder(name);
    c10::InferenceMode guard;
    t.slots->allocate_slots(2, 32);
    const SlotReference whole = slot_greedy(*t.net, slot_prompt_ids(21, 12), 4);
    // Three chunks draw, one after the other, the ids one draw of 12 gives.
    torch::manual_seed(21);
    t.slots->prefill_slot(0, 0, 4, false);
    EXPECT_EQ(t.slots->slot_length(0), 4);
    t.slots->prefill_slot(0, 4, 3, false);
    t.slots->prefill_slot(0, 7, 5, true);
    EXPECT_EQ(t.slots->slot_length(0), 12);
    expect_slot_output(t, 0, whole, 0, "chunked prefill");
    torch::manual_seed(21);
    t.slots->prefill_slot(1, 0, 12, true);
    expect_slot_output(t, 0, whole, 0, "whole prefill");
    for (size_t i = 1; i < 4; ++i) {
      t.slots->decode_slots(2);
      expect_slot_output(t, 0, whole, i, "chunked, decode " + std::to_string(i));
      expect_slot_output(t, 1, whole, i, "whole, decode " + std::to_string(i));
    }
  }
}

TEST(SlottedGeneration, AMovedRequestContinuesAsBefore) {
  for (const std::string name : {"gpt2", "llama"}) {
    SlotDecoder t = slot_decoder(name);
    c10::InferenceMode guard;
    const SlotReference second = slot_greedy(*t.net, slot_prompt_ids(32, 3), 7);
    t.slots->allocate_slots(2, 32);
    torch::manual_seed(31);
    t.slots->prefill_slot(0, 0, 6, true);
    torch::manual_seed(32);
    t.slots->prefill_slot(1, 0, 3, true);
    t.slots->decode_slots(2);
    t.slots->decode_slots(2);
    expect_slot_output(t, 1, second, 2, "before the move");
    // The request in slot 0 ends; the last running one fills its slot.
    t.slots->move_slot(1, 0);
    EXPECT_EQ(t.slots->slot_length(0), 5);
    EXPECT_EQ(t.slots->slot_length(1), 0);
    for (size_t i = 3; i < 7; ++i) {
      t.slots->decode_slots(1);  // one row: the fp32 matrix-vector products
      ASSERT_EQ(t.gen->last_logits().sizes(), (std::vector<int64_t>{1, kSlotVocab}));
      expect_slot_output(t, 0, second, i, "after the move, output " + std::to_string(i));
    }
    EXPECT_EQ(t.slots->slot_length(0), 9);
  }
}

// Restores the autocast state a test changed.
struct SlotBf16Autocast {
  SlotBf16Autocast() {
    at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
    at::autocast::set_cpu_enabled(true);
  }
  ~SlotBf16Autocast() {
    at::autocast::set_cpu_enabled(was_enabled);
    at::autocast::set_autocast_cpu_dtype(was_dtype);
    at::autocast::clear_cache();
  }
  bool was_enabled = at::autocast::is_cpu_enabled();
  at::ScalarType was_dtype = at::autocast::get_autocast_cpu_dtype();
};

TEST(SlottedGeneration, BytesPerPositionFollowTheCacheDtypeAndTheContextIsTheLimit) {
  for (const std::string name : {"gpt2", "llama"}) {
    SlotDecoder t = slot_decoder(name);
    const DecoderSpec& s = t.net->spec;
    c10::InferenceMode guard;
    // Keys and values of 2 layers, kv_heads x head_dim 8 each, fp32.
    EXPECT_EQ(t.slots->kv_bytes_per_position(), 2 * 2 * s.kv_heads * 8 * 4) << name;
    EXPECT_EQ(t.slots->max_positions(), kSlotContext);
    EXPECT_THROW(t.slots->allocate_slots(2, kSlotContext + 1), UsageError) << name;
    t.slots->allocate_slots(2, kSlotContext);
    torch::manual_seed(41);
    t.slots->prefill_slot(0, 0, 6, true);
    const auto fp32 = t.gen->last_logits().clone();
    {
      // bf16 autocast projects keys in bf16: a cache of half the bytes, which serves too.
      SlotBf16Autocast bf16;
      EXPECT_EQ(t.slots->kv_bytes_per_position(), 2 * 2 * s.kv_heads * 8 * 2) << name;
      t.slots->allocate_slots(2, kSlotContext);
      torch::manual_seed(41);
      t.slots->prefill_slot(0, 0, 6, true);
      t.slots->decode_slots(1);
      EXPECT_EQ(t.slots->slot_length(0), 7);
      torch::manual_seed(41);
      t.slots->prefill_slot(0, 0, 6, true);
    }
    const auto bf16 = t.gen->last_logits();
    EXPECT_EQ(bf16.scalar_type(), torch::kFloat);
    EXPECT_LT((bf16 - fp32).abs().max().item<double>(),
              0.05 * fp32.abs().max().item<double>() + 1e-3)
        << name;
    EXPECT_EQ(t.slots->kv_bytes_per_position(), 2 * 2 * s.kv_heads * 8 * 4) << name;
  }
}

// Counts aten::embedding (one per forward's token lookup) by the phase scope around it.
struct SlotEmbeddingCount {
  int prefill = 0, decode = 0, outside = 0;
};
thread_local SlotEmbeddingCount* t_slot_count = nullptr;
thread_local const char* t_slot_phase = nullptr;

std::unique_ptr<at::ObserverContext> slot_count_start(const at::RecordFunction& fn) {
  const char* name = fn.name();
  if (fn.scope() == at::RecordScope::USER_SCOPE && phase_of_scope(name)) {
    t_slot_phase = name;
  } else if (std::strcmp(name, "aten::embedding") == 0) {
    if (t_slot_phase == nullptr)
      ++t_slot_count->outside;
    else
      ++(phase_of_scope(t_slot_phase) == Phase::kPrefill ? t_slot_count->prefill
                                                         : t_slot_count->decode);
  }
  return nullptr;
}

void slot_count_end(const at::RecordFunction& fn, at::ObserverContext*) {
  if (fn.scope() == at::RecordScope::USER_SCOPE && phase_of_scope(fn.name()))
    t_slot_phase = nullptr;
}

TEST(SlottedGeneration, EachCallRunsInItsPhaseScope) {
  SlotDecoder t = slot_decoder("llama");
  c10::InferenceMode guard;
  t.slots->allocate_slots(2, 32);
  SlotEmbeddingCount count;
  t_slot_count = &count;
  const auto handle = at::addThreadLocalCallback(
      at::RecordFunctionCallback(&slot_count_start, &slot_count_end)
          .scopes({at::RecordScope::USER_SCOPE, at::RecordScope::FUNCTION}));
  t.slots->prefill_slot(0, 0, 3, false);
  t.slots->prefill_slot(0, 3, 3, true);
  t.slots->prefill_slot(1, 0, 4, true);
  t.slots->decode_slots(2);
  at::removeCallback(handle);
  t_slot_count = nullptr;
  EXPECT_EQ(count.prefill, 3);
  EXPECT_EQ(count.decode, 1);
  EXPECT_EQ(count.outside, 0);
}

}  // namespace
}  // namespace plumb
