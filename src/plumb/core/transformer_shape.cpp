// Counting a transformer's work and traffic from its dimensions (see transformer_shape.h).
#include "plumb/core/transformer_shape.h"

#include "plumb/core/errors.h"

namespace plumb {
namespace {

// Width of the attention's query/output side and of its key/value side.
int64_t attention_width(const TransformerShape& s) {
  return s.heads * s.head_dim;
}
int64_t kv_width(const TransformerShape& s) {
  return s.kv_heads * s.head_dim;
}

// Matrix parameters of one layer: W_q, W_k, W_v, W_o and the feed-forward matrices.
int64_t matrices_per_layer(const TransformerShape& s) {
  const int64_t attention =
      s.d_model * attention_width(s) + 2 * s.d_model * kv_width(s) + attention_width(s) * s.d_model;
  const int64_t feed_forward = (s.gated_mlp ? 3 : 2) * s.d_model * s.ffn;
  return attention + feed_forward;
}

// Biases and norm weights of one layer.
int64_t vectors_per_layer(const TransformerShape& s) {
  const int64_t norm = s.layer_norm ? 2 * s.d_model : s.d_model;
  int64_t vectors = 2 * norm;  // one norm before (or after) each of the two sublayers
  if (s.linear_bias)
    vectors += attention_width(s) + 2 * kv_width(s) + s.d_model + (s.gated_mlp ? 2 : 1) * s.ffn +
               s.d_model;
  return vectors;
}

}  // namespace

int64_t layer_matrix_parameters(const TransformerShape& shape) {
  return shape.layers * matrices_per_layer(shape);
}

int64_t parameter_count(const TransformerShape& s) {
  const int64_t final_norm = s.layer_norm ? 2 * s.d_model : s.d_model;
  const int64_t embeddings = s.vocab * s.d_model * (s.tied_embedding ? 1 : 2) +
                             (s.learned_positions ? s.max_positions * s.d_model : 0);
  return s.layers * (matrices_per_layer(s) + vectors_per_layer(s)) + final_norm + embeddings +
         s.extra_parameters;
}

double kv_cache_bytes(const TransformerShape& shape, int64_t batch, int64_t positions,
                      double element_bytes) {
  return 2.0 * static_cast<double>(shape.layers * kv_width(shape) * positions * batch) *
         element_bytes;
}

ForwardCost forward_cost(const TransformerShape& s, int64_t batch, int64_t new_tokens,
                         int64_t context, int64_t logits_per_request, double weight_element_bytes,
                         double kv_element_bytes) {
  PLUMB_ASSERT(batch >= 1 && new_tokens >= 1 && context >= new_tokens,
               "a forward call adds at least one token within its context");
  const double tokens = static_cast<double>(batch * new_tokens);
  const double logits_rows = static_cast<double>(batch * logits_per_request);
  const double d = static_cast<double>(s.d_model);
  const double vocab = static_cast<double>(s.vocab);

  ForwardCost cost;
  // Projections and feed-forward: one multiply-add per matrix parameter and token; attention:
  // QK^T and the weighted sum of V, each heads * head_dim * context multiply-adds per token.
  cost.flops = 2.0 * tokens * static_cast<double>(layer_matrix_parameters(s)) +
               4.0 * tokens * static_cast<double>(s.layers * attention_width(s) * context) +
               2.0 * logits_rows * d * vocab;

  const int64_t final_norm = s.layer_norm ? 2 * s.d_model : s.d_model;
  // extra_parameters (BERT's pooler and head) are not read by a decoder's forward; an encoder
  // reads them whole once per call.
  double parameters_read =
      static_cast<double>(s.layers * (matrices_per_layer(s) + vectors_per_layer(s)) + final_norm);
  const bool projects = logits_per_request > 0;
  // The output projection reads its whole matrix; the token embedding is read at the rows of
  // the call's tokens, which lie inside that matrix when the two are tied.
  if (projects) parameters_read += vocab * d;
  if (!(projects && s.tied_embedding)) parameters_read += tokens * d;
  if (s.learned_positions) parameters_read += tokens * d;
  if (!s.causal) parameters_read += static_cast<double>(s.extra_parameters);
  cost.weight_bytes = parameters_read * weight_element_bytes;

  cost.kv_read_bytes = kv_cache_bytes(s, batch, context, kv_element_bytes);
  cost.kv_write_bytes = kv_cache_bytes(s, batch, new_tokens, kv_element_bytes);
  return cost;
}

ForwardCost prefill_cost(const TransformerShape& shape, int64_t batch, int64_t prompt,
                         double weight_element_bytes, double kv_element_bytes) {
  return forward_cost(shape, batch, prompt, prompt, 1, weight_element_bytes, kv_element_bytes);
}

ForwardCost decode_cost(const TransformerShape& shape, int64_t batch, int64_t context,
                        double weight_element_bytes, double kv_element_bytes) {
  return forward_cost(shape, batch, 1, context, 1, weight_element_bytes, kv_element_bytes);
}

}  // namespace plumb
