// Synthetic inputs with the real shapes, dtypes and value ranges of each domain. No dataset
// is downloaded: a benchmark needs the right tensor shapes and statistics, not the pixels.
#pragma once

#include <cstdint>

#include <torch/torch.h>

namespace plumb::workloads {

// ImageNet-style normalised images: [batch, channels, height, width], N(0, 1) per channel,
// which is what a mean/std-normalised input pipeline delivers.
torch::Tensor normalized_images(int64_t batch, int64_t channels, int64_t height, int64_t width,
                                const torch::Device& device);

// Class labels uniform in [0, classes): [batch] int64.
torch::Tensor class_labels(int64_t batch, int64_t classes, const torch::Device& device);

// MNIST-like intensities in [0, 1]: [batch, pixels]; about 19% of pixels are ink with
// intensity in [0.5, 1], the rest exactly 0 (MNIST's measured ink fraction is ~19%).
torch::Tensor mnist_like_pixels(int64_t batch, int64_t pixels, const torch::Device& device);

// Log-uniform (Zipf-like) word-frequency distribution over [0, vocab):
// P(k) = (log(k + 2) - log(k + 1)) / log(vocab + 1), the distribution TensorFlow's
// log_uniform_candidate_sampler assumes for frequency-sorted vocabularies. [vocab] float.
torch::Tensor log_uniform_probabilities(int64_t vocab, const torch::Device& device);

// Token ids drawn from `probabilities` ([vocab]) and shifted by `first_id` so that reserved
// symbols (PAD/GO/EOS/UNK) below it never appear: [rows, cols] int64.
torch::Tensor zipf_tokens(const torch::Tensor& probabilities, int64_t rows, int64_t cols,
                          int64_t first_id);

}  // namespace plumb::workloads
