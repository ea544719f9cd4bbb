// The Workload::build of a workload whose model class is constructed from the resolved config
// and the device: `w.build = build_model<MyModel>;` instead of a lambda repeated in each factory.
#pragma once

#include <memory>

#include <torch/torch.h>

#include "plumb/core/config.h"
#include "plumb/core/workload.h"

namespace plumb::workloads {

template <typename M>
std::unique_ptr<Model> build_model(const Config& c, const torch::Device& device) {
  return std::make_unique<M>(c, device);
}

}  // namespace plumb::workloads
