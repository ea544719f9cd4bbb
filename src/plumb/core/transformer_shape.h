// The dimensions of a transformer workload (GPT-2, Llama, BERT, ParaDnn's transformer
// generator) and what one forward call over it computes and reads, counted from those
// dimensions: FLOPs, weight bytes, KV-cache bytes. `plumb info` prints these per token for
// prefill and decode without building the model (a Llama-3-8B does not fit in fp32 on the
// machines plumb runs on); the decode roofline divides measured rates by them.
//
// Counting rules (docs/llm.md): a multiply-add is 2 FLOPs; attention scores and the weighted
// sum over `context` keys cost 4 * heads * head_dim * context FLOPs per new token (all keys
// of the call are computed: a prefill's causal mask blocks half of the score matrix but the
// matrix is computed whole); a forward reads every weight matrix, bias and norm once, the
// embedding only at the rows of its tokens (the whole table when the output projection is
// tied to it); attention reads the keys and values of `context` positions per request and
// writes those of the new tokens.
#pragma once

#include <cstdint>
#include <string>

namespace plumb {

struct TransformerShape {
  int64_t layers = 0;
  int64_t d_model = 0;
  int64_t heads = 0;     // query heads
  int64_t kv_heads = 0;  // key/value heads (grouped-query attention: fewer than heads)
  int64_t head_dim = 0;  // per head; heads * head_dim is the attention width
  int64_t ffn = 0;       // feed-forward inner width
  int64_t vocab = 0;
  int64_t max_positions = 0;       // the longest context the model takes
  bool gated_mlp = false;          // SwiGLU: gate, up and down matrices instead of two
  bool linear_bias = false;        // biases on every projection (GPT-2, BERT)
  bool layer_norm = true;          // LayerNorm (weight and bias) rather than RMSNorm (weight)
  bool learned_positions = false;  // a position table read at the tokens' rows
  bool tied_embedding = true;      // the output projection is the embedding table
  bool causal = true;              // a decoder; false: an encoder, which has no decode phase
  // Parameters outside the layers, embeddings and final norm (BERT's token-type table,
  // pooler and task head), so that parameter_count is the model's whole trainable count.
  int64_t extra_parameters = 0;
};

// Trainable parameters of the whole model, counted from its dimensions (equal to the built
// module's count: tests check this for every transformer workload).
int64_t parameter_count(const TransformerShape& shape);

// What one forward call computes and moves, for `batch` requests each adding `new_tokens`
// tokens and attending over `context` positions (the new ones included).
struct ForwardCost {
  double flops = 0;
  double weight_bytes = 0;    // every parameter the call reads, once
  double kv_read_bytes = 0;   // keys and values attention reads
  double kv_write_bytes = 0;  // keys and values of the new tokens
  double bytes() const { return weight_bytes + kv_read_bytes + kv_write_bytes; }
};

// `logits_per_request`: positions per request that go through the output projection (a
// generation needs only the last: 1; a language-model loss needs all: new_tokens; an encoder
// with no output projection: 0).
ForwardCost forward_cost(const TransformerShape& shape, int64_t batch, int64_t new_tokens,
                         int64_t context, int64_t logits_per_request, double weight_element_bytes,
                         double kv_element_bytes);

// A generation's prefill over `prompt` tokens per request (logits at the last position only).
ForwardCost prefill_cost(const TransformerShape& shape, int64_t batch, int64_t prompt,
                         double weight_element_bytes, double kv_element_bytes);
// One decode iteration: one new token per request attending `context` positions.
ForwardCost decode_cost(const TransformerShape& shape, int64_t batch, int64_t context,
                        double weight_element_bytes, double kv_element_bytes);

// Parameters of the weight matrices (projections and feed-forward) of all layers: the part
// of the model every token multiplies through.
int64_t layer_matrix_parameters(const TransformerShape& shape);
// Bytes of a KV cache holding `positions` positions for `batch` requests.
double kv_cache_bytes(const TransformerShape& shape, int64_t batch, int64_t positions,
                      double element_bytes);

}  // namespace plumb
