// Optimizer and initialisers shared by the ParaDnn generators (see paradnn_common.h).
#include "plumb/workloads/paradnn/paradnn_common.h"

#include <cmath>
#include <string>

#include "plumb/core/errors.h"

namespace plumb::workloads {

void add_paradnn_optimizer_keys(Config& config) {
  config.add_choice("optimizer", "rmsprop", {"rmsprop", "sgd", "momentum", "adam"},
                    "rmsprop (the paper's), sgd, momentum (also in ParaDnn's code) or adam");
  config.add_double("lr", 0.1,
                    "learning rate (ParaDnn code: 0.1 for every model and optimizer; adam, not in "
                    "ParaDnn, wants about 0.001)");
  config.add_double("momentum", 0.9, "momentum of rmsprop and momentum (ParaDnn code: 0.9)");
  config.add_double("rms_decay", 0.9, "RMSProp decay of the squared-gradient average (0.9)");
  config.add_double("eps", 1.0, "RMSProp epsilon (ParaDnn code: 1.0; TF adds it under the root)");
}

std::unique_ptr<torch::optim::Optimizer> make_paradnn_optimizer(std::vector<torch::Tensor> params,
                                                                const Config& config) {
  const std::string& name = config.get_string("optimizer");
  const double lr = config.get_double("lr");
  const double momentum = config.get_double("momentum");
  if (name == "rmsprop") {
    // TF's RMSProp computes ms = d ms + (1 - d) g^2, mom = m mom + lr g / sqrt(ms + eps), with
    // eps under the square root and ms starting at 1; PyTorch's divides by sqrt(ms) + eps and
    // starts ms at 0. With eps = 1.0 the step sizes differ slightly, the work does not: the same
    // elementwise passes over every parameter and the same two state tensors.
    return std::make_unique<torch::optim::RMSprop>(params,
                                                   torch::optim::RMSpropOptions(lr)
                                                       .alpha(config.get_double("rms_decay"))
                                                       .eps(config.get_double("eps"))
                                                       .momentum(momentum));
  }
  if (name == "sgd") {
    return std::make_unique<torch::optim::SGD>(params, torch::optim::SGDOptions(lr));
  }
  if (name == "momentum") {
    // TF's MomentumOptimizer (accum = m accum + g; w -= lr accum) is PyTorch's SGD momentum
    // with dampening 0.
    return std::make_unique<torch::optim::SGD>(params,
                                               torch::optim::SGDOptions(lr).momentum(momentum));
  }
  if (name == "adam") {
    return std::make_unique<torch::optim::Adam>(params, torch::optim::AdamOptions(lr));
  }
  throw UsageError("optimizer must be one of: rmsprop, sgd, momentum, adam (got '" + name + "')");
}

OptimizerFactory paradnn_optimizer_factory(const Config& config) {
  return [config](std::vector<torch::Tensor> params) {
    return make_paradnn_optimizer(std::move(params), config);
  };
}

void glorot_uniform_(torch::Tensor weight, int64_t fan_in, int64_t fan_out) {
  torch::NoGradGuard no_grad;
  const double a = std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
  weight.uniform_(-a, a);
}

void variance_scaling_(torch::Tensor weight, int64_t fan_in) {
  torch::NoGradGuard no_grad;
  // Redraw the values beyond two standard deviations (as TF's truncated_normal does), then
  // divide by the truncated distribution's standard deviation, 0.8796, as TF does.
  weight.normal_();
  for (auto outside = weight.abs() > 2; outside.any().item<bool>(); outside = weight.abs() > 2)
    weight.copy_(torch::where(outside, torch::randn_like(weight), weight));
  weight.mul_(std::sqrt(1.0 / static_cast<double>(fan_in)) / 0.87962566103423978);
}

}  // namespace plumb::workloads
