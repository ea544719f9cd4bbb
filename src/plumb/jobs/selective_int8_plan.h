// The selective-quantization plan of plumb precision --by layer: the error each int8 layer adds
// alone (every other layer kept in fp32),
// and the greedy plan that keeps the layers adding the most error in fp32 until the whole
// model's error against fp32 is within the budget.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "plumb/run/error_against_fp32.h"
#include "plumb/run/run_result.h"

namespace plumb::jobs {

struct Int8LayerError {
  std::string layer;
  run::ErrorAgainstFp32 error;  // int8 in this layer alone
};

struct SelectiveInt8Plan {
  std::vector<Int8LayerError> layers;  // largest error first
  std::vector<std::string> keep;       // layers kept in fp32
  run::ErrorAgainstFp32 error;         // of int8 with `keep` in fp32
  bool met = false;                    // error.value <= max_error
};

// Searches the plan for `options` (its dtype is set to int8) against `reference`, keeping at
// most `max_steps` layers. Throws UsageError when int8 cannot run.
SelectiveInt8Plan search_selective_int8_plan(const std::string& workload_name,
                                             const run::Fp32Reference& reference,
                                             const run::RunOptions& options, double max_error,
                                             size_t max_steps);

}  // namespace plumb::jobs
