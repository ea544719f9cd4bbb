// The Server scenario's search for the largest arrival rate that keeps a tail-latency bound:
// independent of the model, over a function that serves one trial at a rate and says whether
// the bound held (latency_percentiles.h's rule).
//
// The rate cannot exceed the Offline ceiling (the server's throughput with every query
// waiting), so the search starts at half the ceiling, halves until a rate holds, then bisects
// geometrically between the highest rate that held and the lowest that did not, until they are
// within `resolution` of each other. An undecided trial counts as not held: the found rate is
// one the run showed, never one it hoped for.
#pragma once

#include <functional>
#include <utility>
#include <vector>

#include "plumb/run/latency_percentiles.h"

namespace plumb::run {

struct RateSearchOptions {
  double ceiling_qps = 0;    // the Offline throughput (not itself tried)
  double resolution = 0.05;  // stop when the failing rate is within this of the held one
  double lowest_qps = 0;     // give up below this rate (no rate held)
  int max_trials = 12;
};

struct RateSearchResult {
  double held_qps = 0;    // the highest rate that held (0: none did)
  double failed_qps = 0;  // the lowest rate tried above it that did not (the ceiling if none)
  std::vector<std::pair<double, TailVerdict>> trials;  // in the order tried
};

using RateTrialFn = std::function<TailVerdict(double rate_qps)>;

RateSearchResult search_rate(const RateSearchOptions& options, const RateTrialFn& trial);

// The Server search tries no rate so low that the queries its trial needs would take longer than
// this to arrive.
inline constexpr double kMaxServerTrialS = 120;

// plumb serve's search (one-shot and token-level alike): from below the Offline `ceiling` at
// `resolution`, down to the rate whose trial at `percentile` would take longer than
// `longest_trial_s` for its queries to arrive (one-shot serving: kMaxServerTrialS).
// `trial` serves one rate, records its run and returns the run's index and verdict.
struct ServerSearch {
  double found = 0, failed = 0;  // the rate held, and the lowest above it that did not
  int found_run = -1;            // the index `trial` gave the run at `found`; -1: none held
};
ServerSearch search_server_rate(double ceiling, double resolution, double percentile,
                                double longest_trial_s,
                                const std::function<std::pair<int, TailVerdict>(double)>& trial);

}  // namespace plumb::run
