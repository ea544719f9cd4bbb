// The similarity analysis's input from the results store: each stored operator profile as a
// vector of self-time shares per op category (Fathom's op classes) or per op type.
#pragma once

#include <string>
#include <vector>

#include "plumb/analysis/similarity.h"
#include "plumb/store/results_store.h"

namespace plumb::analysis {

struct SimilarityQuery {
  std::string by = "category";         // "category" | "op" (operator type)
  std::string mode;                    // "train" | "infer"; empty: both
  std::vector<std::string> workloads;  // only these (e.g. a suite's), in this order; empty: all
  std::string tag;                     // only profiles stored with this tag; empty: any
  int threads = 0;                     // only this thread count; 0: any
};

// One row per (workload, mode, threads): the LATEST profile of it (highest store id, i.e. the
// last one written) among the passes that finished ok with operator time; a failed pass would
// describe a partial step and is skipped, and a sweep point's profile (one point of a design
// space, not the workload as configured) is never used. Several batches of one (workload, mode,
// threads) are therefore not separate items: the newest wins.
// Labels are "workload mode", plus " Nthr" when the selection holds several thread counts.
// Rows follow `query.workloads` when given, else workload name; then train before infer, then
// threads. Features are every category / op type that appears, by mean share (largest first,
// ties by name); a row has 0 for one its profile lacks. Shares are of operator time, so each
// row sums to 1 (framework overhead outside operators is not a kind of work).
// Throws UsageError for an unknown `by` or `mode`, and when fewer than 2 profiles match, saying
// how to create them (plumb profile W --mode M --db F).
FeatureVectors profile_vectors(const store::ResultsStore& store, const SimilarityQuery& query);

}  // namespace plumb::analysis
