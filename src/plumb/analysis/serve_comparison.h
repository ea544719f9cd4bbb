// plumb compare's rows for serve sessions (plumb serve): sessions of the two sides are matched on
// workload, scenario and setting (precision, threads, workers, bound, batching, config), the
// newest successful one per side, and compared on the scenario's own figure:
//   offline        throughput of full batches (queries/s), from each batch's service time;
//   single-stream  one stream's queries/s (1 / mean latency), from every query's latency;
//   server, rate   the same from every query's latency at that rate;
//   server, search the found rate; its interval is the ratio of the two searches' brackets
//                  (held rate, first rate above it that missed), so "faster" or "slower" needs
//                  brackets that do not overlap beyond the tolerance.
// Token-level sessions (a generative workload, kind "token") are matched the same way:
//   offline        output tokens/s, from the engine iterations' durations (both sides run the
//                  same iterations: every request waits at the start);
//   server, rate   two rows, the TTFT and the TPOT tail at the bounds' percentile (as 1 / tail,
//                  so that B faster is above 1), each interval the ratio of the two tails'
//                  order-statistic intervals;
//   server, search the found request rate, as a one-shot search.
#pragma once

#include <map>
#include <string>

#include "plumb/analysis/comparison_inputs.h"
#include "plumb/store/results_store.h"
#include "plumb/store/serve_records.h"

namespace plumb::analysis {

// The serve sessions of a side that its tag and workload filters select (none for explicit run
// ids), the newest successful one per match key.
std::map<std::string, store::StoredServeSession> selected_serve_sessions(
    const store::ResultsStore& db, const ComparisonSide& side);

// Appends one row per serve setting both sides measured, and the unmatched ones to only_in_a/b.
void add_serve_rows(const ComparisonRequest& request, const store::ResultsStore& a,
                    const store::ResultsStore& b, Comparison& comparison);

}  // namespace plumb::analysis
