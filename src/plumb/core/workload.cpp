// Helpers shared by all workloads (see workload.h).
#include "plumb/core/workload.h"

#include "plumb/core/errors.h"

namespace plumb {

bool generates_tokens(const Workload& workload, const Config& config) {
  return workload.transformer_shape && workload.transformer_shape(config).causal;
}

int64_t count_trainable_parameters(torch::nn::Module& module) {
  int64_t total = 0;
  for (const auto& p : module.parameters(/*recurse=*/true))
    if (p.requires_grad()) total += p.numel();
  return total;
}

Config suite_config(const Workload& workload) {
  Config config = workload.default_config();
  config.set_int("batch", workload.info.small_batch);
  config.apply_settings(workload.info.suite_settings);
  return config;
}

Config tiny_config(const Workload& workload) {
  Config config = workload.default_config();
  config.apply_settings(workload.info.tiny_config);
  return config;
}

}  // namespace plumb
