// The update rule of the models that clip their gradients' global L2 norm before each
// optimizer step (gnmt, seq2seq, seq2seq_gru, inception_v3), as their reference code does.
#pragma once

#include <vector>

#include <torch/torch.h>

#include "plumb/core/layer_scope.h"

namespace plumb::workloads {

// Clips the global L2 norm of `parameters`' gradients to `max_norm`, then steps `optimizer`
// (a torch::optim optimizer or a model's own with step()); both under the "optimizer" scope:
// clipping is part of the update.
template <class Optimizer>
void clipped_update(Optimizer& optimizer, const std::vector<torch::Tensor>& parameters,
                    double max_norm) {
  LayerScope scope("optimizer");
  torch::nn::utils::clip_grad_norm_(parameters, max_norm);
  optimizer.step();
}

}  // namespace plumb::workloads
