// What the store keeps of reduced precision: precision-vs-fp32 findings and precisions left
// untimed.
#pragma once

#include <cstdint>
#include <string>

#include "plumb/core/dtype.h"
#include "plumb/run/output_error.h"

namespace plumb::store {

// What `plumb precision` found for one precision against fp32 (schema v7): the speed ratio of
// two stored runs and the output error on the same inputs and weights. The run fields are read
// from the run it describes.
struct PrecisionComparisonRecord {
  int64_t id = 0;
  int64_t run_id = 0;            // the precision's timed run
  int64_t reference_run_id = 0;  // the fp32 run it is measured against
  std::string workload, mode;    // of run_id (read back only)
  Dtype dtype = Dtype::kFp32;
  std::string memory_format, tag;
  int64_t batch = 0;
  int threads = 0;
  double speedup = 0, speedup_low = 0, speedup_high = 0;  // throughput / fp32's, 95% interval
  bool error_measured = false;  // false: the workload exposes no output, or training
  run::OutputError error;       // against fp32 (meaningful only when error_measured)
  std::string note;             // "selective plan: layer1.0.conv1 kept in fp32", or why no error
};

// A precision a quick characterization did not time (schema v14): the CPU has no units for it
// and LibTorch would emulate it at a fraction of fp32's speed. Superseded by a run of the same
// item, which readers show instead.
struct UntimedPrecision {
  int64_t id = 0;
  std::string tag, workload, mode, dtype;
  std::string reason;   // one line: what the probe found and what the emulation costs
  std::string command;  // the command that measures it anyway
  std::string decided_at;
};

}  // namespace plumb::store
