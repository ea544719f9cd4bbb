// Synthetic sentence batches (see token_data.h).
#include "plumb/workloads/common/token_data.h"

#include "plumb/workloads/common/synthetic_data.h"

namespace plumb::workloads {

torch::Tensor sentence_lengths(int64_t rows, int64_t min_len, int64_t max_len,
                               const torch::Device& device) {
  return torch::randint(min_len, max_len + 1, {rows},
                        torch::TensorOptions().dtype(torch::kLong).device(device));
}

torch::Tensor length_mask(const torch::Tensor& lengths, int64_t cols) {
  auto positions = torch::arange(cols, lengths.options()).unsqueeze(0);  // [1, cols]
  return positions.lt(lengths.unsqueeze(1));                             // [rows, cols]
}

torch::Tensor padded_sentences(const torch::Tensor& probabilities, const torch::Tensor& lengths,
                               int64_t cols, int64_t first_id, int64_t eos_id, int64_t pad_id) {
  auto words = zipf_tokens(probabilities, lengths.size(0), cols, first_id);  // [rows, cols]
  auto positions = torch::arange(cols, lengths.options()).unsqueeze(0);      // [1, cols]
  auto last = (lengths - 1).unsqueeze(1);                                    // [rows, 1]
  words = torch::where(positions.eq(last), torch::full_like(words, eos_id), words);
  return torch::where(positions.gt(last), torch::full_like(words, pad_id), words);
}

}  // namespace plumb::workloads
