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

namespace plumb::run {

// Receives short progress lines ("warm-up steady after 15 iterations ...").
using ProgressFn = std::function<void(const std::string&)>;

// Throws UsageError for invalid options (threads, device, budgets).
void validate_options(const RunOptions& options);

RunResult run_workload(const Workload& workload, const RunOptions& options,
                       const ProgressFn& progress = {});

// The flags of `options`' run settings, spelled as every command that runs a workload takes
// them: --mode, --batch and --threads, then the device, precision (with int8's --keep-fp32
// and --embedding-bits), memory format, engine and heap where they differ from the defaults,
// then --seed.
std::vector<std::string> setting_flags(const RunOptions& options);
// "plumb <command> <workload>", setting_flags(), the command's own flags (`own`), and --set
// for every config key that differs from the workload's defaults: the reproducer line of
// every command's records.
std::string command_line(const std::string& command, const Workload& workload,
                         const RunOptions& options, const std::vector<std::string>& own);
// plumb run's line: command_line() with the sampling budgets that shaped the measurement.
std::string reproducer_command(const Workload& workload, const RunOptions& options);
// {"--set", "key=value", ...} for every config key except batch that differs from the
// workload's defaults.
std::vector<std::string> set_flags(const Workload& workload, const Config& config);

// Applies the number of intra-op threads LibTorch uses (warns via the returned text when
// more than the machine has, "" otherwise).
std::string apply_threads(int threads);

// Parses "cpu", "cuda", "cuda:N"; throws UsageError when the device is unknown or absent.
torch::Device parse_device(const std::string& text);

// True for "cuda" and "cuda:N", whether or not this machine has such a device.
bool names_a_gpu(const std::string& text);

}  // namespace plumb::run
