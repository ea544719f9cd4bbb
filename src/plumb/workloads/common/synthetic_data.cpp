// Synthetic data generators (see synthetic_data.h).
#include "plumb/workloads/common/synthetic_data.h"

namespace plumb::workloads {

torch::Tensor normalized_images(int64_t batch, int64_t channels, int64_t height, int64_t width,
                                const torch::Device& device) {
  return torch::randn({batch, channels, height, width}, torch::TensorOptions().device(device));
}

torch::Tensor class_labels(int64_t batch, int64_t classes, const torch::Device& device) {
  return torch::randint(classes, {batch},
                        torch::TensorOptions().dtype(torch::kLong).device(device));
}

torch::Tensor mnist_like_pixels(int64_t batch, int64_t pixels, const torch::Device& device) {
  auto opts = torch::TensorOptions().device(device);
  auto ink = torch::rand({batch, pixels}, opts).lt(0.19);
  auto intensity = torch::rand({batch, pixels}, opts) * 0.5 + 0.5;
  return intensity * ink.to(torch::kFloat);
}

torch::Tensor log_uniform_probabilities(int64_t vocab, const torch::Device& device) {
  auto k = torch::arange(vocab, torch::TensorOptions().dtype(torch::kDouble).device(device));
  auto p = (torch::log(k + 2) - torch::log(k + 1)) / std::log(static_cast<double>(vocab) + 1);
  return p.to(torch::kFloat);
}

torch::Tensor zipf_tokens(const torch::Tensor& probabilities, int64_t rows, int64_t cols,
                          int64_t first_id) {
  auto flat = torch::multinomial(probabilities, rows * cols, /*replacement=*/true);
  return flat.view({rows, cols}) + first_id;
}

}  // namespace plumb::workloads
