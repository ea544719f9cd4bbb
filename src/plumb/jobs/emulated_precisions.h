// The requested precisions this CPU has no units for, each with the sentence that says so: what
// the probe found and what LibTorch's emulation costs, measured now. characterize --quick leaves
// them untimed; precision and tune say it before they spend minutes on them.
#pragma once

#include <string>
#include <vector>

#include "plumb/core/precision.h"
#include "plumb/store/precision_records.h"
#include "plumb/store/results_store.h"
#include "plumb/store/run_record.h"

namespace plumb::jobs {

struct EmulatedPrecision {
  Dtype dtype = Dtype::kBf16;
  std::string sentence;  // analysis::no_units_sentence
};

// Decided from this machine's newest stored probe; where none is stored, from the probe's own
// engine measurement of each dtype, run briefly now (a few milliseconds, one thread). fp32 and
// fp16 are never listed: fp32 is the reference, and LibTorch has no CPU fp16 kernels to emulate
// with (a run reports it unsupported).
std::vector<EmulatedPrecision> emulated_precisions(const store::ResultsStore& db,
                                                   const std::vector<Dtype>& dtypes, int threads);

// Prints one line per emulated precision among `dtypes` on stderr, before a command times them.
void warn_emulated_precisions(const store::ResultsStore& db, const std::vector<Dtype>& dtypes,
                              int threads);

// The characterization a quick pass is part of, as its reproducer needs it.
struct QuickPass {
  std::string tag;   // "characterize:quick"
  std::string name;  // --name
  std::string size;  // --size
  std::string db;    // --db
  int threads = 0;
};

// For a quick pass whose --dtypes the user did not name: takes every precision this CPU has no
// units for out of `dtypes`, says so on stderr, and stores one record per workload with why and
// the command that times it anyway.
void leave_emulated_precisions_untimed(store::ResultsStore& db, std::vector<Dtype>& dtypes,
                                       const std::vector<std::string>& workloads,
                                       const QuickPass& pass);

// The records of `tag` that no run of the same item (timed, failed or unsupported) superseded.
std::vector<store::UntimedPrecision> still_untimed(std::vector<store::UntimedPrecision> records,
                                                   const std::vector<store::StoredRun>& runs,
                                                   const std::string& tag);

}  // namespace plumb::jobs
