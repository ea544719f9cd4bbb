// The greedy keep-fp32 search of plumb precision --by layer (see selective_int8_plan.h).
#include "plumb/jobs/selective_int8_plan.h"

#include <algorithm>
#include <iostream>

#include <fmt/format.h>

#include "plumb/core/errors.h"

namespace plumb::jobs {
namespace {

// The error of int8 with `keep` left in fp32, against the fp32 outputs.
run::ErrorAgainstFp32 int8_error_keeping(const run::Fp32Reference& reference, run::RunOptions o,
                                         const std::vector<std::string>& keep) {
  o.dtype = Dtype::kInt8;
  o.keep_fp32 = keep;
  auto e = reference.error_of(o);
  if (!e.outcome.ok())
    throw UsageError("int8 failed while searching the plan: " + e.outcome.reason);
  return e;
}

}  // namespace

SelectiveInt8Plan search_selective_int8_plan(const std::string& workload_name,
                                             const run::Fp32Reference& reference,
                                             const run::RunOptions& options, double max_error,
                                             size_t max_steps) {
  SelectiveInt8Plan plan;
  run::RunOptions int8 = options;
  int8.dtype = Dtype::kInt8;
  const auto full = reference.error_of(int8);
  if (!full.outcome.ok())
    throw UsageError("int8 cannot run for " + workload_name + ": " + full.outcome.reason);
  std::cerr << fmt::format("error of each of {} int8 layers alone ...\n",
                           full.quantized_layers.size());
  for (const auto& layer : full.quantized_layers) {
    std::vector<std::string> others;
    for (const auto& l : full.quantized_layers)
      if (l != layer) others.push_back(l);
    plan.layers.push_back({layer, int8_error_keeping(reference, options, others)});
  }
  std::sort(plan.layers.begin(), plan.layers.end(),
            [](const auto& a, const auto& b) { return a.error.value > b.error.value; });
  // Greedy: keep the layers that add the most error in fp32 until the whole is within.
  plan.error = full;
  for (size_t i = 0; plan.error.value > max_error && i < plan.layers.size() && i < max_steps; ++i) {
    plan.keep.push_back(plan.layers[i].layer);
    plan.error = int8_error_keeping(reference, options, plan.keep);
  }
  plan.met = plan.error.value <= max_error;
  return plan;
}

}  // namespace plumb::jobs
