// The search behind `plumb memory --memory-limit`: the largest batch whose step fits a memory
// budget. Memory is not quite linear in the batch at small sizes (fixed-size workspace
// dominates there), so the straight-line prediction from the batches measured first is only a
// first guess: the search then measures batches without the budget, each placed by the secant
// through the two largest successful batches so far, keeping `fits` (the largest batch whose
// step peak is within the limit) and `fails` (the smallest one over it or out of memory) until
// they are adjacent, and finally runs `fits` under the limit to verify it. Pure: batches are
// measured by a callback, so the rules are tested on synthetic peaks.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "plumb/core/outcome.h"

namespace plumb::analysis {

// One memory pass as the search sees it.
struct MeasuredBatch {
  int64_t batch = 0;
  OutcomeState state = OutcomeState::kError;  // the pass's status
  int64_t total_peak = 0;                     // the step's total peak, when ok

  bool ok() const { return state == OutcomeState::kOk; }  // the pass ran (not out of memory)
};

// Measures one batch: without a budget of the search's own (limit_bytes 0) or under one.
using MeasureBatch = std::function<MeasuredBatch(int64_t batch, int64_t limit_bytes)>;

enum class CapacityStop {
  kSearched,           // the search ran; `verified` says whether `fits` held under the limit
  kBatchOneFailed,     // batch 1 did not run: nothing can fit
  kBatchOneOverLimit,  // batch 1 alone needs more than the limit
};

struct CapacityResult {
  CapacityStop stop = CapacityStop::kSearched;
  int64_t limit_bytes = 0;
  int64_t batch1_bytes = 0;
  int64_t predicted = 0;  // from the fit over the batches measured first; -1: no growth
  int64_t fits = 0;       // largest batch measured within the limit
  int64_t fails = 0;      // smallest batch measured over it (0: none measured)
  int64_t verified = 0;   // `fits`, once it ran under the enforced limit (0: it did not)
  int64_t verified_peak = 0;
  std::vector<MeasuredBatch> attempts;  // the batches the search measured, in order
};

// At most this many batches are measured between the first guess and the verification.
inline constexpr int kCapacityAttempts = 10;

// `measured`: the batches measured before the search (without a budget). Batch 1 is measured
// first when it is not among them.
CapacityResult find_memory_capacity(int64_t limit_bytes, std::vector<MeasuredBatch> measured,
                                    const MeasureBatch& measure);

}  // namespace plumb::analysis
