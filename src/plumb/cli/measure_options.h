// Options shared by the commands that execute workloads (run, suite, profile, memory ...): device,
// seed, warm-up, sampling budgets, database, tag and --json. Defaults come from run::RunOptions,
// the one place they are defined.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "plumb/core/workload.h"
#include "plumb/run/run_result.h"

namespace plumb::cli {

struct MeasureFlags {
  std::string mode = "train";
  std::string dtypes = "fp32";  // --dtype: a comma-separated list, one run per entry
  std::string memory_format = "contiguous";
  std::string engine = "onednn";
  std::string heap = "keep";
  run::RunOptions run;
  std::string db = "plumb.db";
  std::string tag;
  bool json = false;
};

// kWith: the CI sampling budgets and the warm-up flags; kWithout: warm-up flags only (profile
// passes take no CI sampling flags); kNone: neither (plumb memory counts its warm-up steps).
enum class SamplingOptions { kWith, kWithout, kNone };
enum class ThreadsOption { kSingle, kNone };  // profile declares its own --threads list

// The default intra-op thread count of every command that runs a workload: every CPU this
// process may use (its affinity mask), as LibTorch sizes its own pool. At least 1.
int default_threads();

// Declares the shared options; --threads defaults to default_threads().
void add_measure_options(CLI::App& cmd, MeasureFlags& flags, double default_max_time,
                         double default_max_warmup_time,
                         SamplingOptions sampling = SamplingOptions::kWith,
                         ThreadsOption threads = ThreadsOption::kSingle);

// For the commands whose figures are the CPU's (operator times on the host clock, the CPU
// allocator's memory, the CPU's roofs and libraries): --device names a GPU -> a parse error
// that says why (exit 2, before anything runs or is stored). Call after add_measure_options.
void restrict_device_to_cpu(CLI::App& cmd, const std::string& why);

// Why operator times are the CPU's: the observer reads the host clock around each operator, and
// on a GPU the host only queues kernels, so it would time their launches.
extern const char* const kOperatorTimesOnTheHost;

// One run descriptor per --dtype entry (in the order given), each validated. Throws
// UsageError for an unknown dtype or memory format.
std::vector<run::RunOptions> make_options(const Workload& w, const Config& config, Mode mode,
                                          const MeasureFlags& flags);

// A job's options (any with `db` and `tag`) storing into --db under --tag of `flags`: what every
// job that stores its results takes from the shared options.
template <typename JobOptions>
JobOptions storing_per(JobOptions options, const MeasureFlags& flags) {
  options.db = flags.db;
  options.tag = flags.tag;
  return options;
}

}  // namespace plumb::cli
