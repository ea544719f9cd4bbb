// Batched beam search for autoregressive decoders. Hypotheses are laid out sentence-major:
// row r = sentence * beam + k, so a decoder keeps its state as [batch * beam, ...] tensors and
// reorders it after each step with index_select(0, step(...)).
//
// Each step extends every live hypothesis by every vocabulary entry, keeps the `beam` best
// candidates per sentence by length-normalised score, and freezes hypotheses that emitted the
// end symbol (they stay in the beam with their score and length, competing with the live ones).
// Decoding stops when every hypothesis has ended (done()) or the caller's length limit is hit.
#pragma once

#include <cstdint>

#include <torch/torch.h>

#include "plumb/core/workload.h"

namespace plumb::workloads {

enum class LengthNorm {
  kGnmt,   // score / ((5 + length) / 6)^alpha (Wu et al. 2016; Vaswani et al., TF-nmt)
  kPower,  // score / length^alpha (alpha = 1: average log-probability per token)
};

class BeamSearch {
 public:
  BeamSearch(int64_t batch, int64_t beam, int64_t eos_id, LengthNorm norm, double alpha,
             const torch::Device& device);

  // log_probs: [batch * beam, V] of the current step. Returns the rows [batch * beam] the new
  // hypotheses extend (index_select the decoder state with it); the chosen tokens are tokens().
  torch::Tensor step(const torch::Tensor& log_probs);

  const torch::Tensor& tokens() const { return tokens_; }  // [batch * beam]
  bool done() const;                                       // every hypothesis has ended
  // Best length-normalised score per sentence [batch], and its token sequence [batch, length]
  // padded with the end symbol after the steps decoded, so decodes that stopped at different
  // steps (fp32 and int8 of one model) compare position by position.
  torch::Tensor best_scores() const;
  torch::Tensor best_sequences(int64_t length) const;

 private:
  torch::Tensor penalty(const torch::Tensor& lengths) const;

  int64_t batch_, beam_, eos_id_;
  LengthNorm norm_;
  double alpha_;
  torch::Tensor scores_;    // [batch, beam] cumulative log-probability
  torch::Tensor lengths_;   // [batch, beam] tokens emitted, the end symbol included (float)
  torch::Tensor finished_;  // [batch, beam] bool
  torch::Tensor history_;   // [batch, beam, steps] token ids
  torch::Tensor tokens_;    // [batch * beam] last tokens
};

// A translation model whose inference is a beam search (gnmt, transformer, seq2seq_gru): a
// step's figure is the sum of every sentence's best length-normalised score, its output the
// best hypotheses, token ids [B, target_len].
class BeamDecodedModel : public Model {
 public:
  double infer_step(const Batch& b) override {
    return decode(b).best_scores().sum().item<double>();
  }
  torch::Tensor infer_output(const Batch& b) override {
    return decode(b).best_sequences(target_len_);
  }

 protected:
  // The batch and sentence shape every translation workload's config states.
  explicit BeamDecodedModel(const Config& c)
      : batch_(c.get_int("batch")),
        source_len_(c.get_int("source_len")),
        target_len_(c.get_int("target_len")),
        min_len_(c.get_int("min_len")),
        beam_(c.get_int("beam")) {}

  // Beam search over the batch's sentences, to the end symbol or target_len steps.
  virtual BeamSearch decode(const Batch& b) = 0;

  int64_t batch_;       // sentence pairs per batch
  int64_t source_len_;  // source positions
  int64_t target_len_;  // target positions; also the beam search's length limit
  int64_t min_len_;     // shortest sentence of a synthetic batch
  int64_t beam_;        // hypotheses kept per sentence
};

}  // namespace plumb::workloads
