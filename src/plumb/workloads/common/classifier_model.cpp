// Batches and optimizers shared by the image classifiers (see classifier_model.h).
#include "plumb/workloads/common/classifier_model.h"

#include <fmt/format.h>

#include "plumb/workloads/common/synthetic_data.h"

namespace plumb::workloads {

Config image_classifier_config(int64_t batch, const std::string& batch_doc, int64_t min_image_size,
                               const std::string& image_doc) {
  Config c;
  c.add_int("batch", batch, batch_doc);
  c.add_int("image_size", 224, image_doc, min_image_size);
  c.add_int("classes", 1000, "output classes (ImageNet-1k)", 2);
  return c;
}

Config& add_sgd_keys(Config& c, double lr, double momentum, double weight_decay,
                     const std::string& source) {
  return c.add_double("lr", lr, fmt::format("SGD learning rate ({}: {:g})", source, lr))
      .add_double("momentum", momentum, fmt::format("SGD momentum ({}: {:g})", source, momentum))
      .add_double("weight_decay", weight_decay,
                  fmt::format("L2 weight decay ({}: {:g})", source, weight_decay));
}

std::function<Batch(int64_t)> sized_image_batches(const Config& config,
                                                  const torch::Device& device) {
  const int64_t size = config.get_int("image_size"), classes = config.get_int("classes");
  return [=](int64_t batch) {
    Batch b;
    b.tensors = {normalized_images(batch, 3, size, size, device),  // [B,3,S,S]
                 class_labels(batch, classes, device)};            // [B]
    b.units = static_cast<double>(batch);
    return b;
  };
}

std::function<Batch()> image_batches(const Config& config, const torch::Device& device) {
  const int64_t batch = config.get_int("batch");
  return [batch, sized = sized_image_batches(config, device)]() { return sized(batch); };
}

OptimizerFactory sgd_from_config(const Config& config, bool nesterov, double lr_scale) {
  const double lr = config.get_double("lr") * lr_scale;
  const double momentum = config.get_double("momentum");
  const double weight_decay = config.get_double("weight_decay");
  return [=](std::vector<torch::Tensor> params) {
    return std::make_unique<torch::optim::SGD>(
        params, torch::optim::SGDOptions(lr).momentum(momentum).nesterov(nesterov).weight_decay(
                    weight_decay));
  };
}

}  // namespace plumb::workloads
