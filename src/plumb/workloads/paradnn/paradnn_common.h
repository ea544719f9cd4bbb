// Pieces shared by the three ParaDnn generators (Wang, Wei & Brooks, "Benchmarking TPU, GPU,
// and CPU Platforms for Deep Learning", MLSys 2020, Sec. 2.1): the optimizer choice and its
// keys, and the initialisers TensorFlow 1.x gave the layers ParaDnn's public code
// (github.com/Emma926/paradnn: fc.py, cnn.py, rnn.py, resnet_model.py) builds.
//
// Optimizer: the paper's models all train with RMSProp ("ParaDnn uses the RMSProp optimizer",
// Sec. 4.2); the public code also offers plain SGD and momentum SGD (flag --optimizer), all at
// learning rate 0.1, RMSProp with decay 0.9, momentum 0.9 and epsilon 1.0. plumb adds Adam for
// sweeps over optimizer state size.
#pragma once

#include <memory>
#include <vector>

#include <torch/torch.h>

#include "plumb/core/config.h"
#include "plumb/workloads/common/classifier_model.h"

namespace plumb::workloads {

// Declares optimizer (rmsprop|sgd|momentum|adam), lr, momentum, rms_decay and eps.
void add_paradnn_optimizer_keys(Config& config);

// The optimizer the config's keys select, over `params`.
std::unique_ptr<torch::optim::Optimizer> make_paradnn_optimizer(std::vector<torch::Tensor> params,
                                                                const Config& config);

// The same, as a factory for make_classifier_model.
OptimizerFactory paradnn_optimizer_factory(const Config& config);

// tf.glorot_uniform_initializer (TF 1.x's default for tf.get_variable and tf.layers.dense) on a
// weight stored as torch does, [fan_out, fan_in]: U(-a, a), a = sqrt(6 / (fan_in + fan_out)).
void glorot_uniform_(torch::Tensor weight, int64_t fan_in, int64_t fan_out);

// tf.variance_scaling_initializer() (scale 1, fan_in, truncated normal): N(0, 1) truncated
// at +-2 and rescaled so the result's standard deviation is sqrt(1 / fan_in).
void variance_scaling_(torch::Tensor weight, int64_t fan_in);

}  // namespace plumb::workloads
