// What a generative workload adds to Model: a prefill over the prompt that fills a KV cache
// preallocated for the whole generation, then one decode iteration per further token, each
// reading every weight and the cache once. One function drives a generation (prefill, then
// gen - 1 decodes) and times each call, so the runner, the profiler and the model's own
// infer_step all run the same sequence; operators run inside a user scope naming their phase,
// so observers can attribute them to prefill or decode.
//
// Token counting follows MLPerf's and vLLM's: `gen` output tokens per request, the first one
// produced by the prefill (its time is the time to first token, TTFT), the other gen - 1 by
// decode iterations (their mean is the time per output token, TPOT).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "plumb/core/workload.h"

namespace plumb {

enum class Phase { kPrefill, kDecode };
const char* phase_name(Phase phase);
// "prefill" / "decode"; nullopt for any other text.
std::optional<Phase> phase_from_name(const std::string& name);
const std::vector<Phase>& all_phases();

// The at::RecordFunction user scope a phase's operators run in.
const char* phase_scope(Phase phase);
// The phase whose scope this is, or nullopt (another user scope).
std::optional<Phase> phase_of_scope(const char* scope_name);
// Runs `call` inside `phase`'s user scope, so observers attribute its operators to the phase
// (generate's calls, and a token-level server's prefill and decode iterations).
void run_in_phase(Phase phase, const std::function<void()>& call);

// The sizes of one generation step.
struct GenerationShape {
  int64_t batch = 1;   // requests decoded together
  int64_t prompt = 1;  // prompt tokens per request
  int64_t gen = 1;     // output tokens per request, the first from the prefill
};

class GenerativeModel {
 public:
  virtual ~GenerativeModel() = default;

  virtual GenerationShape generation_shape() const = 0;

  // Empties the KV cache and runs the prompt batch.tensors[0] ([B, P] token ids) through the
  // model, filling the cache's first P positions. Returns the first output token of each
  // request [B] (int64).
  virtual torch::Tensor prefill(const Batch& batch) = 0;

  // Feeds the previous tokens [B] at the next position (appending their keys and values to
  // the cache in place) and returns the next token of each request [B].
  virtual torch::Tensor decode(const torch::Tensor& tokens) = 0;

  // Logits [B, V] that chose the tokens of the latest prefill or decode call (float).
  virtual torch::Tensor last_logits() const = 0;

  // Bytes the KV cache holds for the whole generation (allocated at prefill).
  virtual int64_t kv_cache_bytes() const = 0;
};

// The model's generative side, or nullptr for a one-shot model.
GenerativeModel* as_generative(Model& model);

// One generation: the output tokens [B, gen] and the seconds of each call (a CUDA device
// is synchronised before each clock stops).
struct GenerationTrace {
  torch::Tensor tokens;          // [B, gen] int64
  double prefill_s = 0;          // the time to first token of the batch
  std::vector<double> decode_s;  // one entry per decode iteration: gen - 1 entries
  double total_s() const;
};

// Runs prefill then gen - 1 decode iterations on `batch`, each inside its phase's scope.
// `after_call`, when given, runs after each call outside the timed region (the runner
// checks for cancellation there; the error measure reads last_logits()). `forced`, when
// defined ([B, gen] int64), feeds decode iteration i the token forced[:, i - 1] instead of the
// model's own previous choice (teacher forcing: the model's logits along another run's
// sequence); the trace's tokens stay the model's own choices at each position.
GenerationTrace generate(GenerativeModel& model, const Batch& batch, const torch::Device& device,
                         const std::function<void(Phase)>& after_call = {},
                         const torch::Tensor& forced = {});

}  // namespace plumb
