// A Model for the common case "images in, class logits out, cross-entropy loss": the step
// logic shared by every classification workload, so each model file only defines its network.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "plumb/core/layer_scope.h"
#include "plumb/core/workload.h"

namespace plumb::workloads {

using OptimizerFactory =
    std::function<std::unique_ptr<torch::optim::Optimizer>(std::vector<torch::Tensor>)>;

// Batch layout: tensors[0] = input, tensors[1] = int64 class labels [B].
template <typename Net>
class ClassifierModel : public Model {
 public:
  // `make_sized` (optional) makes a batch of any number of examples (plumb serve).
  ClassifierModel(Net net, const torch::Device& device, std::function<Batch()> make_batch,
                  const OptimizerFactory& optimizer_for,
                  std::function<Batch(int64_t)> make_sized = {})
      : net_(std::move(net)),
        make_batch_(std::move(make_batch)),
        make_sized_(std::move(make_sized)) {
    net_->to(device);
    optimizer_ = optimizer_for(net_->parameters());
  }

  torch::nn::Module& module() override { return *net_; }
  Batch make_batch() override { return make_batch_(); }
  std::optional<Batch> make_batch_of(int64_t examples) override {
    if (!make_sized_) return std::nullopt;
    return make_sized_(examples);
  }

  double train_step(const Batch& batch) override {
    {
      LayerScope scope("optimizer");
      optimizer_->zero_grad();
    }
    torch::Tensor logits = net_->forward(batch.tensors[0]);  // [B, C]
    torch::Tensor loss;                                      // []
    {
      LayerScope scope("loss");
      loss = scope.output(torch::nn::functional::cross_entropy(logits, batch.tensors[1]));
    }
    loss.backward();
    {
      LayerScope scope("optimizer");
      optimizer_->step();
    }
    return loss.item<double>();  // also synchronises a GPU stream before the clock stops
  }

  double infer_step(const Batch& batch) override {
    const torch::Tensor logits = infer_output(batch);  // [B, C]
    return logits.sum().item<double>();
  }

  torch::Tensor infer_output(const Batch& batch) override {
    return net_->forward(batch.tensors[0]);  // logits [B, C]
  }

 private:
  Net net_;
  std::function<Batch()> make_batch_;
  std::function<Batch(int64_t)> make_sized_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
};

// The keys every ImageNet-shaped classifier has: batch (with the source of its default),
// image_size (224, at least `min_image_size`: what the network's pooling
// allows) and classes (1000). Optimizer keys are added by each workload with their source.
Config image_classifier_config(
    int64_t batch, const std::string& batch_doc, int64_t min_image_size,
    const std::string& image_doc = "input height and width (ImageNet crop)");

// Synthetic ImageNet-shaped batches sized by the config's batch, image_size and classes:
// normalised images [B, 3, S, S] and int64 labels [B]; one unit (image) per example.
std::function<Batch()> image_batches(const Config& config, const torch::Device& device);
// The same images and labels for any number of examples B (the serving batcher's batches).
std::function<Batch(int64_t)> sized_image_batches(const Config& config,
                                                  const torch::Device& device);

// Declares the keys sgd_from_config reads, each doc naming `source` and the value
// ("SGD learning rate (paper: 0.1)").
Config& add_sgd_keys(Config& c, double lr, double momentum, double weight_decay,
                     const std::string& source);

// SGD from the config's lr (times lr_scale), momentum and weight_decay keys (Nesterov when the
// recipe says so).
OptimizerFactory sgd_from_config(const Config& config, bool nesterov = false,
                                 double lr_scale = 1.0);

template <typename Net>
std::unique_ptr<Model> make_classifier_model(Net net, const torch::Device& device,
                                             std::function<Batch()> make_batch,
                                             const OptimizerFactory& optimizer_for,
                                             std::function<Batch(int64_t)> make_sized = {}) {
  return std::make_unique<ClassifierModel<Net>>(std::move(net), device, std::move(make_batch),
                                                optimizer_for, std::move(make_sized));
}

// The common case: ImageNet-shaped batches from the config and SGD from its lr / momentum /
// weight_decay keys (image_batches + sgd_from_config + make_classifier_model).
template <typename Net>
std::unique_ptr<Model> make_sgd_classifier(Net net, const Config& config,
                                           const torch::Device& device, bool nesterov = false) {
  return make_classifier_model(std::move(net), device, image_batches(config, device),
                               sgd_from_config(config, nesterov),
                               sized_image_batches(config, device));
}

}  // namespace plumb::workloads
