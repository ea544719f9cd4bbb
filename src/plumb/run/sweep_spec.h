// What a sweep is (ParaDnn Sec. 2; TBD's throughput-vs-mini-batch study): one workload, list-
// valued config keys expanded as a cartesian product, the mode(s), what to measure at each
// point and the budgets. Read from a YAML or JSON file (`plumb sweep SPEC`) or built from the
// command line (`plumb sweep WORKLOAD --grid key=v1,v2`); either way it is validated against
// the workload's config before anything runs, and it has a canonical form whose hash
// identifies the sweep in a database (rerunning it resumes; merging refuses a different spec
// under the same name).
//
// File format (every key optional except workload and grid):
//   name: paradnn-fc-cpu          # default: the file name without extension
//   workload: paradnn_fc
//   modes: [train]                # train and/or infer (default [train])
//   dtypes: [fp32, bf16]          # precisions, each a run setting (default [fp32])
//   measure: [throughput]         # throughput (always), memory, profile
//   threads: 2
//   seed: 0
//   set: {input: 2000}            # single values for other config keys
//   grid:                         # list-valued keys: a list, or a range
//     nodes: [32, 128, 512]
//     batch: {from: 64, to: 1024, times: 2}   # 64, 128, ..., 1024
//     layers: {from: 4, to: 16, step: 4}      # 4, 8, 12, 16
//   budget: {max_time: 3, max_warmup_time: 3, target_ci: 0.05, min_samples: 5,
//            point_time_limit: 60}
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "plumb/core/mode.h"
#include "plumb/core/precision.h"
#include "plumb/core/workload.h"
#include "plumb/run/run_result.h"

namespace plumb::run {

// The most points one sweep (and one range of a grid key) may have: beyond it a spec is a
// mistake (a step far too small), not a plan, and expanding it would exhaust memory.
inline constexpr size_t kMaxSweepPoints = 100000;

struct SweepBudget {
  double max_time_s = 5;    // measurement per point (the runner's --max-time)
  double max_warmup_s = 5;  // warm-up cap per point
  double target_ci = 0.02;  // the runner's stopping rule applies to every point
  size_t min_samples = 5;
  double point_time_limit_s = 0;  // 0: none; a point whose run overruns it is a timeout
};

struct SweepSpec {
  std::string name;
  std::string workload;
  std::vector<Mode> modes = {Mode::kTrain};
  std::vector<Dtype> dtypes = {Dtype::kFp32};  // expanded like modes, inside each mode
  bool measure_memory = false;                 // the memory profiler's peaks per point
  bool measure_profile = false;  // an operator profile per point (FLOPs, bytes, categories)
  int threads = 1;
  uint64_t seed = 0;
  std::vector<std::string> sets;                                       // "key=value"
  std::vector<std::pair<std::string, std::vector<std::string>>> grid;  // in the spec's order
  SweepBudget budget;
};

// One point of the expanded sweep.
struct SweepPoint {
  size_t index = 0;  // position in the full expansion (sharding splits on it)
  Mode mode = Mode::kTrain;
  Dtype dtype = Dtype::kFp32;
  std::vector<std::pair<std::string, std::string>> values;  // grid key -> value, grid order
  // "mode=train batch=64 nodes=32" ("mode=train dtype=bf16 ..." when the sweep lists
  // precisions): identifies the point within its sweep
  std::string key;
};

// Parses a YAML or JSON file (`name` defaults to the file's stem). Throws UsageError naming
// the file and the problem: unknown keys (with the valid ones), empty lists, ranges with no
// values, keys the workload does not have, values it refuses.
SweepSpec load_sweep_spec(const std::string& path);
// Parses spec text (YAML or JSON); `default_name` when it has no name.
SweepSpec parse_sweep_spec(const std::string& text, const std::string& default_name);
// From the command line: "key=v1,v2,..." per --grid.
SweepSpec sweep_spec_from_grid(const std::string& workload, const std::vector<std::string>& grid,
                               const std::vector<std::string>& sets);

// Checks the spec against the registry's workload: every grid value and set applies to its
// config (UsageError otherwise), at least one point.
void validate_sweep_spec(const SweepSpec& spec, const Workload& workload);

// The canonical form (sorted, defaults filled in) and its hash: equal for equal sweeps.
nlohmann::ordered_json canonical_json(const SweepSpec& spec);
// True when the sweep lists precisions other than fp32 alone: its points then carry their
// dtype in the key and in the stored parameters (a text parameter, so analyses group by it).
bool sweeps_precision(const SweepSpec& spec);
std::string sweep_key(const SweepSpec& spec);

// Every point, modes outermost then the grid's keys in order (the last varies fastest).
std::vector<SweepPoint> expand(const SweepSpec& spec);

// A point's grid values (and its dtype when the sweep lists precisions) as stored with it:
// numbers as numbers, so analyses can regress on them.
nlohmann::ordered_json point_params(const SweepSpec& spec, const SweepPoint& point);

// The resolved config of a point: defaults, then the spec's sets, then the point's values.
Config point_config(const Workload& workload, const SweepSpec& spec, const SweepPoint& point);

// --shard "i/n" (0 <= i < n): this process runs the points whose index % n == i.
struct Shard {
  int index = 0;
  int count = 1;
};
Shard parse_shard(const std::string& text);
// From common job-array environments when --shard is not given: PLUMB_SHARD ("i/n"), Slurm
// (SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN of SLURM_ARRAY_TASK_COUNT), SGE (SGE_TASK_ID,
// 1-based, of SGE_TASK_LAST). {0, 1} when none is set.
Shard shard_from_environment();

}  // namespace plumb::run
