// Shared by the int8 quantizer tests: random batches with a model's fp32 outputs on them, and a
// quantizer calibrated on the same batches.
#pragma once

#include <functional>
#include <vector>

#include <torch/torch.h>

#include "plumb/run/int8_quantizer.h"

namespace plumb::testing {

using Forward = std::function<torch::Tensor(const torch::Tensor&)>;

struct Fp32Reference {
  std::vector<torch::Tensor> inputs;   // three batches of the given shape
  std::vector<torch::Tensor> outputs;  // the model's fp32 outputs on them (copies)
};

inline Fp32Reference fp32_reference(at::IntArrayRef shape, const Forward& forward) {
  Fp32Reference r;
  for (int i = 0; i < 3; ++i) r.inputs.push_back(torch::randn(shape));
  for (const auto& x : r.inputs) r.outputs.push_back(forward(x).clone());
  return r;
}

// Calibrates on every input, then quantizes: from here the model runs in int8.
inline void calibrate_and_quantize(run::Int8Quantizer& q, const std::vector<torch::Tensor>& inputs,
                                   const Forward& forward) {
  q.calibrate([&] {
    for (const auto& x : inputs) forward(x);
  });
  q.quantize();
}

}  // namespace plumb::testing
