// Options shared by the commands that execute workloads (run, suite, profile): device, seed,
// warm-up, sampling budgets, database, tag and --json. Defaults come from run::RunOptions,
// the one place they are defined.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "plumb/core/workload.h"
#include "plumb/run/run_result.h"

namespace plumb::cli {

struct MeasureFlags {
  std::string mode = "train";
  run::RunOptions run;
  std::string db = "plumb.db";
  std::string tag;
  bool json = false;
};

enum class SamplingOptions { kWith, kWithout };  // profile passes take no CI sampling flags
enum class ThreadsOption { kSingle, kNone };     // profile declares its own --threads list

void add_measure_options(CLI::App& cmd, MeasureFlags& flags, double default_max_time,
                         double default_max_warmup_time,
                         SamplingOptions sampling = SamplingOptions::kWith,
                         ThreadsOption threads = ThreadsOption::kSingle);

run::RunOptions make_options(const Workload& w, const Config& config, Mode mode,
                             const MeasureFlags& flags);

}  // namespace plumb::cli
