// The serving engine of plumb serve without a model: the arrival process (mean and dispersion
// of inter-arrival times), the tail-latency rule and percentile intervals, the batcher's
// grouping (full batches, the wait, a run with no more queries to come), its latency on a fake
// service of known time against queueing theory (M/D/1), and the rate search.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <numeric>
#include <set>
#include <stdexcept>
#include <vector>

#include <malloc.h>

#include <cstdlib>
#include <cstring>

#include "fake_workload.h"
#include "fresh_heap.h"
#include "fresh_process.h"
#include "plumb/core/errors.h"
#include "plumb/run/latency_percentiles.h"
#include "plumb/run/rate_search.h"
#include "plumb/run/serve_defaults.h"
#include "plumb/run/serve_session.h"
#include "plumb/run/serving_loop.h"
#include "plumb/run/stats.h"

namespace plumb::run {
namespace {

// A service of a known time: a spin, so it takes that long whatever the scheduler does.
ServiceFn spin_for(double seconds) {
  return [seconds](int64_t) {
    const auto until = std::chrono::steady_clock::now() +
                       std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                           std::chrono::duration<double>(seconds));
    while (std::chrono::steady_clock::now() < until) {
    }
  };
}

std::vector<double> gaps_of(const std::vector<double>& arrivals) {
  std::vector<double> gaps(arrivals.size());
  std::adjacent_difference(arrivals.begin(), arrivals.end(), gaps.begin());
  return gaps;
}

TEST(ArrivalProcess, ExponentialGapsHaveTheRateAsMeanAndUnitDispersion) {
  const auto arrivals = poisson_arrivals(2000, 50000, 7);
  ASSERT_EQ(arrivals.size(), 50000u);
  EXPECT_TRUE(std::is_sorted(arrivals.begin(), arrivals.end()));
  const auto gaps = gaps_of(arrivals);
  const double mean = mean_of(gaps);
  // Standard error of the mean gap: 1/(rate sqrt(n)) = 0.45% here; 2% is over 4 of them.
  EXPECT_NEAR(mean, 1.0 / 2000, 0.02 / 2000);
  // An exponential's standard deviation equals its mean (coefficient of variation 1).
  EXPECT_NEAR(stddev_of(gaps) / mean, 1.0, 0.03);
  // Poisson counts: in windows of 10 mean arrivals, variance / mean = 1 (index of dispersion).
  const double window = 10.0 / 2000;
  std::vector<double> counts(static_cast<size_t>(arrivals.back() / window), 0.0);
  for (double a : arrivals) {
    const auto i = static_cast<size_t>(a / window);
    if (i < counts.size()) counts[i] += 1;
  }
  const double m = mean_of(counts), v = std::pow(stddev_of(counts), 2);
  EXPECT_NEAR(m, 10.0, 0.3);
  EXPECT_NEAR(v / m, 1.0, 0.1);
}

TEST(ArrivalProcess, IsSeededAndRefusesRatesThatAreNotPositive) {
  EXPECT_EQ(poisson_arrivals(100, 50, 3), poisson_arrivals(100, 50, 3));
  EXPECT_NE(poisson_arrivals(100, 50, 3), poisson_arrivals(100, 50, 4));
  EXPECT_THROW(poisson_arrivals(0, 10, 1), UsageError);
  EXPECT_THROW(poisson_arrivals(-5, 10, 1), UsageError);
}

TEST(TailRule, MinimumQueriesFollowFromZeroOvershoots) {
  // ln(0.05) / ln(q), rounded up.
  EXPECT_EQ(min_queries_for(0.99), 299u);
  EXPECT_EQ(min_queries_for(0.90), 29u);
  EXPECT_EQ(min_queries_for(0.999), 2995u);
  const std::vector<double> fast(299, 0.001);
  EXPECT_EQ(check_tail(fast, 0.99, 0.002).verdict, TailVerdict::kMet);
  const std::vector<double> too_few(298, 0.001);
  EXPECT_EQ(check_tail(too_few, 0.99, 0.002).verdict, TailVerdict::kUndecided);
}

TEST(TailRule, OvershootsDecideAgainstTheBoundOnlyWithConfidence) {
  auto latencies = [](size_t n, size_t over) {
    std::vector<double> l(n, 0.001);
    for (size_t i = 0; i < over; ++i) l[i * (n / std::max<size_t>(over, 1))] = 0.010;
    return l;
  };
  // 1% over the bound is exactly at the p99 limit: never "met", undecided.
  const auto at_limit = check_tail(latencies(1000, 10), 0.99, 0.005);
  EXPECT_EQ(at_limit.verdict, TailVerdict::kUndecided);
  EXPECT_EQ(at_limit.over_bound, 10u);
  EXPECT_LT(at_limit.share_low, 0.01);
  EXPECT_GT(at_limit.share_high, 0.01);
  // 3% over with 1000 queries: clearly missed. 0.2% over with 5000: clearly met.
  EXPECT_EQ(check_tail(latencies(1000, 30), 0.99, 0.005).verdict, TailVerdict::kMissed);
  EXPECT_EQ(check_tail(latencies(5000, 10), 0.99, 0.005).verdict, TailVerdict::kMet);
  // The same 3% with only 50 queries (1 or 2 over) cannot be called either way.
  EXPECT_EQ(check_tail(latencies(50, 1), 0.99, 0.005).verdict, TailVerdict::kUndecided);
}

TEST(TailRule, PercentileIntervalBracketsTheEstimateAndNarrowsWithQueries) {
  std::vector<double> small(100), large(10000);
  std::iota(small.begin(), small.end(), 1.0);
  std::iota(large.begin(), large.end(), 1.0);
  const auto a = percentile_interval(small, 0.9);
  EXPECT_NEAR(a.value, 90.1, 1e-9);
  EXPECT_LT(a.low, a.value);
  EXPECT_GT(a.high, a.value);
  const auto b = percentile_interval(large, 0.9);
  EXPECT_LT((b.high - b.low) / b.value, (a.high - a.low) / a.value);
  EXPECT_LE(b.low, 9000.1);
  EXPECT_GE(b.high, 9000.1);
  // 100 queries cannot bound the 99.9th percentile from above.
  EXPECT_TRUE(std::isnan(percentile_interval(small, 0.999).high));
}

TEST(Batcher, WaitingQueriesAreTakenInFullBatchesAndTheRestTogether) {
  ServingOptions o;
  o.policy = {4, 0.0};
  std::vector<int64_t> served;
  const auto times =
      serve_arrivals(std::vector<double>(10, 0.0), o, [&](int64_t n) { served.push_back(n); });
  EXPECT_EQ(served, (std::vector<int64_t>{4, 4, 2}));
  ASSERT_EQ(times.size(), 10u);
  EXPECT_EQ(times[0].batch, 4);
  EXPECT_EQ(times[9].batch, 2);
  for (const auto& t : times) EXPECT_LE(t.start_s, t.finish_s);
}

TEST(Batcher, HoldsTheOldestQueryForTheWaitButNotLonger) {
  std::vector<int64_t> served;
  const auto record = [&](int64_t n) { served.push_back(n); };
  ServingOptions o;
  // A second query 3 ms after the first joins it within a 20 ms wait; the batch starts when it
  // is full (at 3 ms), not when the wait ends.
  o.policy = {2, 0.020};
  auto t = serve_arrivals({0.0, 0.003}, o, record);
  EXPECT_EQ(served, (std::vector<int64_t>{2}));
  EXPECT_GE(t[0].start_s, 0.003);
  EXPECT_LT(t[0].start_s, 0.015);
  // Without a wait the first goes alone.
  served.clear();
  o.policy = {2, 0.0};
  serve_arrivals({0.0, 0.003}, o, record);
  EXPECT_EQ(served, (std::vector<int64_t>{1, 1}));
  // With a 5 ms wait and the second query at 30 ms, the first leaves alone after the wait.
  served.clear();
  o.policy = {2, 0.005};
  t = serve_arrivals({0.0, 0.030}, o, record);
  EXPECT_EQ(served, (std::vector<int64_t>{1, 1}));
  EXPECT_GE(t[0].start_s, 0.005);
  EXPECT_LT(t[0].start_s, 0.025);
}

TEST(Batcher, SeveralWorkersServeEveryQueryOnceAndAFailureReachesTheCaller) {
  ServingOptions o;
  o.policy = {3, 0.0};
  o.workers = 2;
  std::atomic<int64_t> total{0};
  std::atomic<int> batches{0};
  const auto times = serve_arrivals(std::vector<double>(100, 0.0), o, [&](int64_t n) {
    total += n;
    // The first two batches wait for each other (up to 10 s), so both workers take part however
    // slowly the second thread starts.
    if (++batches <= 2) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (batches.load() < 2 && std::chrono::steady_clock::now() < until) {
      }
    }
  });
  EXPECT_EQ(total.load(), 100);
  std::set<int32_t> workers;
  for (const auto& t : times) {
    EXPECT_GT(t.batch, 0);
    workers.insert(t.worker);
  }
  EXPECT_EQ(workers.size(), 2u);
  EXPECT_THROW(serve_arrivals(std::vector<double>(10, 0.0), o,
                              [](int64_t) { throw std::runtime_error("kernel missing"); }),
               std::runtime_error);
}

// M/D/1: Poisson arrivals at rate lambda, one server, deterministic service D, batches of one.
// The mean wait in the queue is rho D / (2 (1 - rho)) with rho = lambda D (Pollaczek-Khinchine).
TEST(Batcher, LatencyOnAFakeModelFollowsMD1) {
  const double service = 0.001, rate = 500;  // rho = 0.5: mean wait 0.5 ms
  ServingOptions o;
  o.policy = {1, 0.0};
  const auto times = serve_arrivals(poisson_arrivals(rate, 3000, 11), o, spin_for(service));
  std::vector<double> wait, serve;
  for (const auto& t : times) {
    wait.push_back(t.queueing_s());
    serve.push_back(t.service_s());
  }
  const double rho = rate * service;
  const double expected_wait = rho * service / (2 * (1 - rho));
  EXPECT_NEAR(median_of(serve), service, 0.1 * service);
  // The sample mean of 3000 correlated waits varies by about 10% here; the scheduler's wake-up
  // delay adds a few tens of microseconds.
  EXPECT_NEAR(mean_of(wait), expected_wait, 0.25 * expected_wait);
  // At twice the load the queue grows as M/D/1 says (rho 0.8: 2 ms), far beyond rho 0.5's.
  const auto busy = serve_arrivals(poisson_arrivals(800, 3000, 12), o, spin_for(service));
  double busy_wait = 0;
  for (const auto& t : busy) busy_wait += t.queueing_s() / static_cast<double>(busy.size());
  EXPECT_GT(busy_wait, 2.5 * mean_of(wait));
}

TEST(Batcher, SingleStreamIssuesTheNextQueryWhenThePreviousFinishes) {
  const auto times = serve_single_stream(20, spin_for(200e-6));
  ASSERT_EQ(times.size(), 20u);
  for (size_t i = 1; i < times.size(); ++i) {
    EXPECT_GE(times[i].arrival_s, times[i - 1].finish_s);
    EXPECT_EQ(times[i].queueing_s(), 0);
    EXPECT_GE(times[i].service_s(), 200e-6);
  }
}

TEST(RateSearch, FindsTheLargestRateWithinTheResolution) {
  RateSearchOptions o;
  o.ceiling_qps = 1000;
  o.resolution = 0.05;
  int calls = 0;
  const auto r = search_rate(o, [&](double rate) {
    ++calls;
    return rate <= 123 ? TailVerdict::kMet : TailVerdict::kMissed;
  });
  EXPECT_LE(r.held_qps, 123);
  EXPECT_GT(r.failed_qps, 123);
  EXPECT_LE(r.failed_qps, r.held_qps * 1.05);
  EXPECT_EQ(static_cast<int>(r.trials.size()), calls);
  EXPECT_LE(calls, o.max_trials);
}

TEST(RateSearch, UndecidedCountsAsNotHeldAndNoRateIsReportedAsNone) {
  RateSearchOptions o;
  o.ceiling_qps = 100;
  o.lowest_qps = 1;
  const auto r = search_rate(
      o, [](double rate) { return rate < 20 ? TailVerdict::kMet : TailVerdict::kUndecided; });
  EXPECT_LT(r.held_qps, 20);
  EXPECT_GE(r.failed_qps, 20);
  const auto none = search_rate(o, [](double) { return TailVerdict::kMissed; });
  EXPECT_EQ(none.held_qps, 0);
  EXPECT_LT(none.failed_qps, 2);  // halved down to the lowest rate
}

TEST(BatchLimits, OfflineTakesTheMostEfficientSizeAndAServerWhatTheBoundAllows) {
  // Service grows slower than the batch up to 8, then per-query cost rises: 8 serves the most.
  const std::vector<int64_t> sizes = {1, 2, 4, 8, 16};
  const std::vector<double> service = {0.010, 0.012, 0.016, 0.024, 0.060};
  auto l = batch_limits(sizes, service, 1.0, 0.0);
  EXPECT_EQ(l.offline_batch, 8);
  EXPECT_EQ(l.server_batch, 8);
  // A 40 ms bound with a 4 ms wait leaves 18 ms per service time: 4 (16 ms), not 8 (24 ms).
  l = batch_limits(sizes, service, 0.040, 0.004);
  EXPECT_EQ(l.offline_batch, 8);
  EXPECT_EQ(l.server_batch, 4);
  // Even one query too slow for that: the smallest size, not none.
  EXPECT_EQ(batch_limits(sizes, service, 0.010, 0.0).server_batch, 1);
  // Within 2% of the best, the larger size.
  EXPECT_EQ(batch_limits({1, 2}, {0.010, 0.0202}, 1.0, 0.0).offline_batch, 2);
}

TEST(ServeDefaults, ComeFromTheDomainAndArePositive) {
  WorkloadInfo recommendation;
  recommendation.domain = "recommendation (click-through rate)";
  const auto r = serve_defaults(recommendation);
  EXPECT_GE(r.bound_s, 0.010);  // Table 1: tens of milliseconds
  EXPECT_LT(r.bound_s, 0.100);
  EXPECT_EQ(r.max_batch, 100);  // Table 1: typical batch 1-100
  EXPECT_NE(r.source.find("Table 1"), std::string::npos);
  WorkloadInfo other;
  other.domain = "question answering";
  const auto o = serve_defaults(other);
  EXPECT_GT(o.bound_s, 0);
  EXPECT_GT(o.max_wait_s, 0);
  EXPECT_LT(o.max_wait_s, o.bound_s);
  EXPECT_DOUBLE_EQ(o.max_wait_s, default_max_wait_s(o.bound_s));
  EXPECT_DOUBLE_EQ(default_max_wait_s(3.0), 0.15);
}

// Bytes glibc maps for one large block while it is live: the block itself under glibc's fixed
// 128 KiB threshold (--heap return), none under the timing policy (--heap keep: carved from the
// heap).
long long mapped_for_a_large_block() {
  constexpr size_t kLargeBlock = 24u << 20;
  static void* volatile block = nullptr;  // escapes, so the pair is not optimised away
  const size_t before = mallinfo2().hblkhd;
  block = std::malloc(kLargeBlock);
  std::memset(block, 1, kLargeBlock);
  const size_t live = mallinfo2().hblkhd;
  std::free(block);
  return static_cast<long long>(live) - static_cast<long long>(before);
}

// plumb serve applies --heap to the served model as plumb run does (it ignored it before).
TEST(ServeHeap, TheServedModelRunsUnderTheHeapPolicy) {
  PLUMB_RUN_IN_FRESH_PROCESS();
  ASSERT_TRUE(testing::heap_is_fresh()) << testing::kHeapNotFresh;
  const Workload w = testing::fake_workload(testing::Behaviour::kSteady);
  ServeOptions o;
  o.run = testing::fake_run_options(w);
  o.run.mode = Mode::kInfer;
  o.scenario = Scenario::kSingleStream;
  o.bound_s = 1;
  o.policy.max_batch = 1;
  o.policy.max_wait_s = 1e-3;
  o.duration_s = 0.05;
  o.run.heap = HeapPolicy::kReturn;
  const ServeResult returned = serve_workload(w, o);
  ASSERT_EQ(returned.status, RunStatus::kOk) << returned.message;
  EXPECT_TRUE(std::any_of(returned.warnings.begin(), returned.warnings.end(),
                          [](const auto& n) { return n.rfind("--heap return:", 0) == 0; }));
  EXPECT_GE(mapped_for_a_large_block(), 24ll << 20);
  o.run.heap = HeapPolicy::kKeep;
  const ServeResult kept = serve_workload(w, o);
  ASSERT_EQ(kept.status, RunStatus::kOk) << kept.message;
  EXPECT_EQ(mapped_for_a_large_block(), 0);
}

}  // namespace
}  // namespace plumb::run
