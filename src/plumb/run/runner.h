// The runner: executes one workload in one mode and measures its step time honestly.
//
// Sequence: set threads, seed and device -> build the model -> warm up until the iteration
// times are steady (steady_state.h) or a cap is hit -> sample until the 95% CI of the mean is
// within target_ci or the time/iteration budget ends. Every iteration time is kept. A failing
// workload (NaN loss, out of memory, exception) becomes a result with that status; only bad
// options raise UsageError.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "plumb/core/workload.h"
#include "plumb/run/run_result.h"
#include "plumb/run/setting_identity.h"  // the reproducer every record stores

namespace plumb::run {

// Receives short progress lines ("warm-up steady after 15 iterations ...").
using ProgressFn = std::function<void(const std::string&)>;

// Throws UsageError for invalid options (threads, device, budgets).
void validate_options(const RunOptions& options);

RunResult run_workload(const Workload& workload, const RunOptions& options,
                       const ProgressFn& progress = {});

// Applies the number of intra-op threads LibTorch uses (warns via the returned text when
// more than the machine has, "" otherwise).
std::string apply_threads(int threads);

// Parses "cpu", "cuda", "cuda:N"; throws UsageError when the device is unknown or absent.
torch::Device parse_device(const std::string& text);

// True for "cuda" and "cuda:N", whether or not this machine has such a device.
bool names_a_gpu(const std::string& text);

}  // namespace plumb::run
