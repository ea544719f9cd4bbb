// Batched beam search (see beam_search.h).
#include "plumb/workloads/common/beam_search.h"

#include <limits>

namespace plumb::workloads {

BeamSearch::BeamSearch(int64_t batch, int64_t beam, int64_t eos_id, LengthNorm norm, double alpha,
                       const torch::Device& device)
    : batch_(batch), beam_(beam), eos_id_(eos_id), norm_(norm), alpha_(alpha) {
  auto opts = torch::TensorOptions().device(device);
  // Only the first hypothesis of each sentence is live at the start; the others score -inf
  // so the first step does not pick the same continuation `beam` times.
  scores_ = torch::full({batch, beam}, -std::numeric_limits<float>::infinity(), opts);
  scores_.select(1, 0).fill_(0);
  lengths_ = torch::zeros({batch, beam}, opts);
  finished_ = torch::zeros({batch, beam}, opts.dtype(torch::kBool));
  history_ = torch::zeros({batch, beam, 0}, opts.dtype(torch::kLong));
}

torch::Tensor BeamSearch::penalty(const torch::Tensor& lengths) const {
  if (norm_ == LengthNorm::kGnmt) return ((lengths + 5.0) / 6.0).pow(alpha_);
  return lengths.clamp_min(1.0).pow(alpha_);
}

torch::Tensor BeamSearch::step(const torch::Tensor& log_probs) {
  const int64_t vocab = log_probs.size(1);
  auto lp = log_probs.view({batch_, beam_, vocab});  // [B, K, V]
  // An ended hypothesis can only be "extended" by the end symbol, at no cost, so it survives
  // unchanged when it is still among the best.
  auto ended_row = torch::full({vocab}, -std::numeric_limits<float>::infinity(), lp.options());
  ended_row[eos_id_] = 0;
  lp = torch::where(finished_.unsqueeze(2), ended_row, lp);
  auto candidates = scores_.unsqueeze(2) + lp;                           // [B, K, V]
  auto new_lengths = lengths_ + finished_.logical_not().to(lp.dtype());  // [B, K]
  auto normalised = candidates / penalty(new_lengths).unsqueeze(2);      // [B, K, V]
  auto best = normalised.view({batch_, beam_ * vocab}).topk(beam_, 1);   // [B, K] each
  auto index = std::get<1>(best);
  auto origin = index.div(vocab, "floor");  // [B, K] hypothesis each candidate extends
  auto token = index.remainder(vocab);      // [B, K]
  scores_ = candidates.view({batch_, beam_ * vocab}).gather(1, index);
  lengths_ = new_lengths.gather(1, origin);
  finished_ = finished_.gather(1, origin).logical_or(token.eq(eos_id_));
  history_ =
      torch::cat({history_.gather(1, origin.unsqueeze(2).expand({batch_, beam_, history_.size(2)})),
                  token.unsqueeze(2)},
                 2);  // [B, K, t + 1]
  tokens_ = token.flatten();
  auto base = torch::arange(batch_, origin.options()).unsqueeze(1) * beam_;  // [B, 1]
  return (origin + base).flatten();                                          // [B * K]
}

bool BeamSearch::done() const {
  return finished_.all().item<bool>();
}

torch::Tensor BeamSearch::best_scores() const {
  return std::get<0>((scores_ / penalty(lengths_)).max(1));
}

torch::Tensor BeamSearch::best_sequences(int64_t length) const {
  auto k = std::get<1>((scores_ / penalty(lengths_)).max(1));  // [B]
  auto best = history_.gather(1, k.view({batch_, 1, 1}).expand({batch_, 1, history_.size(2)}))
                  .squeeze(1);  // [B, steps]
  const int64_t missing = length - best.size(1);
  if (missing <= 0) return best;
  return torch::cat({best, torch::full({batch_, missing}, eos_id_, best.options())}, 1);
}

}  // namespace plumb::workloads
