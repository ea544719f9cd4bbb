// Summary of a token-level serving run (see token_metrics.h).
#include "plumb/run/token_metrics.h"

#include <algorithm>
#include <cmath>

#include "plumb/run/statistic_registry.h"

namespace plumb::run {

namespace {

double percentile_of(const Samples& samples, double q) {
  return statistic::kPercentile.compute(samples, {q, kTailConfidence, {}}).value;
}

LatencyTail latency_tail(const std::vector<double>& values, double bound_s, double percentile) {
  LatencyTail out;
  if (values.empty()) return out;
  const Samples samples(values);
  const Estimate tail =
      statistic::kPercentileInterval.compute(samples, {percentile, kTailConfidence, {}});
  out.tail = {tail.value, tail.low, tail.high, samples.size()};
  out.check = check_tail(values, percentile, bound_s);
  out.p50_s = percentile_of(samples, 0.50);
  out.p90_s = percentile_of(samples, 0.90);
  out.p99_s = percentile_of(samples, 0.99);
  return out;
}

}  // namespace

TailVerdict both_verdicts(TailVerdict a, TailVerdict b) {
  if (a == TailVerdict::kMissed || b == TailVerdict::kMissed) return TailVerdict::kMissed;
  if (a == TailVerdict::kMet && b == TailVerdict::kMet) return TailVerdict::kMet;
  return TailVerdict::kUndecided;
}

TokenRunSummary summarize_token_trace(const TokenServeTrace& trace, const TokenBounds& bounds) {
  TokenRunSummary s;
  s.requests = trace.requests.size();
  if (trace.requests.empty()) return s;
  std::vector<double> ttft, tpot, itl, e2e;
  double begin = trace.requests.front().arrival_s, end = begin, queueing = 0;
  for (const auto& r : trace.requests) {
    ttft.push_back(r.ttft_s());
    if (r.output > 1) tpot.push_back(r.tpot_s());
    for (size_t i = 1; i < r.token_s.size(); ++i) itl.push_back(r.token_s[i] - r.token_s[i - 1]);
    e2e.push_back(r.latency_s());
    queueing += r.queueing_s();
    s.output_tokens += r.output;
    begin = std::min(begin, r.arrival_s);
    end = std::max(end, r.finish_s);
    const bool ttft_ok = r.ttft_s() <= bounds.ttft_s;
    const bool tpot_ok = r.output <= 1 || r.tpot_s() <= bounds.tpot_s;
    if (ttft_ok && tpot_ok) ++s.good;
  }
  const double n = static_cast<double>(s.requests);
  s.duration_s = end - begin;
  if (s.duration_s > 0) {
    s.request_rate = n / s.duration_s;
    s.output_token_rate = static_cast<double>(s.output_tokens) / s.duration_s;
    s.goodput_rate = static_cast<double>(s.good) / s.duration_s;
  }
  s.ttft = latency_tail(ttft, bounds.ttft_s, bounds.percentile);
  s.tpot = latency_tail(tpot, bounds.tpot_s, bounds.percentile);
  // A run of one-token requests has no TPOT to miss.
  const TailVerdict tpot_verdict = tpot.empty() ? TailVerdict::kMet : s.tpot.check.verdict;
  s.verdict = both_verdicts(s.ttft.check.verdict, tpot_verdict);
  if (!itl.empty()) {
    const Samples gaps(itl);
    s.itl_p50_s = percentile_of(gaps, 0.50);
    s.itl_p99_s = percentile_of(gaps, 0.99);
  }
  const Samples latencies(e2e);
  s.e2e_p50_s = percentile_of(latencies, 0.50);
  s.e2e_p99_s = percentile_of(latencies, 0.99);
  s.queueing_mean_s = queueing / n;
  double batch_sum = 0, decode_iterations = 0;
  for (const auto& it : trace.iterations) {
    if (it.decode_batch > 0) {
      batch_sum += it.decode_batch;
      ++decode_iterations;
    }
    s.largest_decode_batch = std::max<int64_t>(s.largest_decode_batch, it.decode_batch);
    s.peak_kv_reserved_bytes = std::max(s.peak_kv_reserved_bytes, it.kv_reserved_bytes);
    s.peak_kv_used_bytes = std::max(s.peak_kv_used_bytes, it.kv_used_bytes);
  }
  if (decode_iterations > 0) s.mean_decode_batch = batch_sum / decode_iterations;
  return s;
}

}  // namespace plumb::run
