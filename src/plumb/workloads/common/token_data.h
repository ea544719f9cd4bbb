// Synthetic sentence batches for sequence models: per-sentence lengths inside a length bucket,
// the matching padding masks, and padded token matrices with Zipf-like word frequencies
// (see synthetic_data.h) and an end-of-sentence symbol after the last word.
#pragma once

#include <cstdint>

#include <torch/torch.h>

namespace plumb::workloads {

// Sentence lengths uniform in [min_len, max_len] (a length bucket: batching by approximate
// length, as NMT toolkits do, keeps a batch's lengths within a narrow band): [rows] int64.
torch::Tensor sentence_lengths(int64_t rows, int64_t min_len, int64_t max_len,
                               const torch::Device& device);

// True at real (non-padding) positions: [rows, cols] bool, position < length.
torch::Tensor length_mask(const torch::Tensor& lengths, int64_t cols);

// Padded sentences [rows, cols] int64: words drawn from `probabilities` ([vocab], shifted by
// `first_id` so reserved ids never appear as words) at positions < length - 1, `eos_id` at
// position length - 1 (lengths count the end symbol), `pad_id` after it.
torch::Tensor padded_sentences(const torch::Tensor& probabilities, const torch::Tensor& lengths,
                               int64_t cols, int64_t first_id, int64_t eos_id, int64_t pad_id);

}  // namespace plumb::workloads
