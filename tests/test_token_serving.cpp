// The token-level server without a model: gamma arrivals (mean and dispersion against the
// burstiness), length mixes and files, the static and continuous schedulers on a fake slotted
// generator of declared costs on a virtual clock (schedules computed by hand), the KV budget
// (never exceeded; a request that can never fit refused), and the TTFT/TPOT/goodput definitions
// on a hand-timed trace.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <numeric>
#include <random>
#include <vector>

#include "fake_slotted.h"
#include "plumb/core/errors.h"
#include "plumb/run/rate_search.h"
#include "plumb/run/request_stream.h"
#include "plumb/run/serving_loop.h"
#include "plumb/run/token_metrics.h"
#include "plumb/run/token_scheduler.h"
#include "plumb/run/token_serve_session.h"
#include "scratch_dir.h"

namespace plumb::run {
namespace {

using testing::FakeSlotCosts;
using testing::FakeSlottedGenerator;
using testing::VirtualClock;

struct GapMoments {
  double mean = 0, cv = 0;
};

GapMoments gap_moments(const std::vector<double>& arrivals) {
  std::vector<double> gaps(arrivals.size());
  std::adjacent_difference(arrivals.begin(), arrivals.end(), gaps.begin());
  const double n = static_cast<double>(gaps.size());
  const double mean = std::accumulate(gaps.begin(), gaps.end(), 0.0) / n;
  double var = 0;
  for (double g : gaps) var += (g - mean) * (g - mean);
  return {mean, std::sqrt(var / (n - 1)) / mean};
}

TEST(TokenArrivals, GammaGapsHaveTheRatesMeanAndACoefficientOfVariationOfOneOverRootBurstiness) {
  for (double burstiness : {0.25, 0.5, 1.0, 4.0}) {
    const auto arrivals = gamma_arrivals(20.0, burstiness, 200000, 7);
    ASSERT_TRUE(std::is_sorted(arrivals.begin(), arrivals.end()));
    const GapMoments m = gap_moments(arrivals);
    EXPECT_NEAR(m.mean, 1.0 / 20.0, 0.02 / 20.0) << "burstiness " << burstiness;
    EXPECT_NEAR(m.cv, 1.0 / std::sqrt(burstiness), 0.03 / std::sqrt(burstiness))
        << "burstiness " << burstiness;
  }
}

TEST(TokenArrivals, BurstinessOneIsThePoissonProcessAndBadValuesAreRefused) {
  EXPECT_EQ(gamma_arrivals(5.0, 1.0, 100, 3), poisson_arrivals(5.0, 100, 3));
  EXPECT_THROW(gamma_arrivals(5.0, 0.0, 10, 3), UsageError);
  EXPECT_THROW(gamma_arrivals(5.0, -1.0, 10, 3), UsageError);
  EXPECT_THROW(gamma_arrivals(-5.0, 0.5, 10, 3), UsageError);
}

TEST(TokenRequests, LengthRangesParseAndRefuseNegativeOrReversedOrMalformedText) {
  const LengthRange fixed = parse_length_range("--prompt-tokens", "128");
  EXPECT_EQ(fixed.low, 128);
  EXPECT_EQ(fixed.high, 128);
  const LengthRange range = parse_length_range("--prompt-tokens", "32-256");
  EXPECT_EQ(range.low, 32);
  EXPECT_EQ(range.high, 256);
  for (const char* bad : {"-5", "0", "256-32", "abc", "12x", "", "3-"})
    EXPECT_THROW(parse_length_range("--prompt-tokens", bad), UsageError) << bad;
}

TEST(TokenRequests, DrawnLengthsStayInTheirRangesAndRepeatWithTheSeed) {
  LengthMix mix;
  mix.prompt = {10, 20};
  mix.output = {1, 5};
  const std::vector<double> arrivals(500, 0.0);
  const auto requests = draw_requests(mix, arrivals, 11);
  for (const auto& r : requests) {
    EXPECT_GE(r.prompt, 10);
    EXPECT_LE(r.prompt, 20);
    EXPECT_GE(r.output, 1);
    EXPECT_LE(r.output, 5);
  }
  const auto again = draw_requests(mix, arrivals, 11);
  for (size_t i = 0; i < requests.size(); ++i) EXPECT_EQ(requests[i].prompt, again[i].prompt);
  EXPECT_EQ(mix.longest(), 25);
}

class TokenLengthFile : public plumb::testing::ScratchDirTest {};

TEST_F(TokenLengthFile, GivesItsPairsAndABadOneIsRefusedWithItsLine) {
  const auto path = dir_ / "lengths.csv";
  {
    std::ofstream out(path);
    out << "# prompt,output\n100,20\n\n7, 3\n";
  }
  const auto pairs = read_length_file(path.string());
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(pairs[1], (std::pair<int64_t, int64_t>{7, 3}));
  {
    std::ofstream out(path);
    out << "# nothing\n\n";
  }
  EXPECT_THROW(read_length_file(path.string()), UsageError);
  {
    std::ofstream out(path);
    out << "100,20\n-4,3\n";
  }
  try {
    read_length_file(path.string());
    FAIL() << "a negative length was read";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
  }
  EXPECT_THROW(read_length_file((dir_ / "missing.csv").string()), UsageError);
}

SchedulerOptions options_of(SchedulerKind kind, int64_t max_batch = 4, int64_t chunk = 0) {
  SchedulerOptions o;
  o.kind = kind;
  o.max_batch = max_batch;
  o.chunk_tokens = chunk;
  o.kv_budget_bytes = 1 << 20;
  return o;
}

// A long request at t = 0 (prompt 10, 10 output tokens) and a short one behind it at 0.5
// (prompt 10, 2 output tokens); a prefill costs 0.1 s per token, a decode iteration 1 s.
std::vector<TokenRequest> long_then_short() {
  return {{0.0, 10, 10}, {0.5, 10, 2}};
}

TokenServeTrace serve_with(const std::vector<TokenRequest>& requests, const SchedulerOptions& o,
                           FakeSlotCosts costs = {}) {
  VirtualClock clock;
  FakeSlottedGenerator engine(clock, costs);
  return serve_token_requests(requests, o, 64, engine, clock);
}

TEST(TokenSchedulers, StaticBatchingHoldsAShortRequestBehindTheLongBatchAsComputedByHand) {
  const auto trace = serve_with(long_then_short(), options_of(SchedulerKind::kStatic));
  const auto& l = trace.requests[0];
  const auto& s = trace.requests[1];
  // Long: prefill 0 -> 1 (first token), 9 decodes -> 10.
  EXPECT_DOUBLE_EQ(l.first_token_s, 1.0);
  EXPECT_DOUBLE_EQ(l.finish_s, 10.0);
  // Short: waits for the batch to end at 10, prefill -> 11, one decode -> 12.
  EXPECT_DOUBLE_EQ(s.admitted_s, 10.0);
  EXPECT_DOUBLE_EQ(s.first_token_s, 11.0);
  EXPECT_DOUBLE_EQ(s.finish_s, 12.0);
  EXPECT_DOUBLE_EQ(s.ttft_s(), 10.5);
}

TEST(TokenSchedulers, ContinuousBatchingLetsTheShortRequestJoinAndFinishFirstAsComputedByHand) {
  const auto trace = serve_with(long_then_short(), options_of(SchedulerKind::kContinuous));
  const auto& l = trace.requests[0];
  const auto& s = trace.requests[1];
  // Prefill-first: long's prefill 0 -> 1; short (arrived at 0.5) prefills alone 1 -> 2; both
  // decode 2 -> 3, when the short one has its 2 tokens; the long one's 8 more decodes end at 11.
  EXPECT_DOUBLE_EQ(l.first_token_s, 1.0);
  EXPECT_DOUBLE_EQ(s.admitted_s, 1.0);
  EXPECT_DOUBLE_EQ(s.first_token_s, 2.0);
  EXPECT_DOUBLE_EQ(s.finish_s, 3.0);
  EXPECT_DOUBLE_EQ(l.finish_s, 11.0);
  EXPECT_EQ(l.token_s, (std::vector<double>{1, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
  EXPECT_DOUBLE_EQ(l.tpot_s(), 10.0 / 9.0);
  // The short request finishes far earlier than under static batching (12).
  const auto statically = serve_with(long_then_short(), options_of(SchedulerKind::kStatic));
  EXPECT_LT(s.finish_s, statically.requests[1].finish_s);
}

TEST(TokenSchedulers, ChunkedPrefillFillsEachIterationsTokenBudgetAfterTheDecodes) {
  const auto trace =
      serve_with(long_then_short(), options_of(SchedulerKind::kContinuous, 4, /*chunk=*/5));
  const auto& l = trace.requests[0];
  const auto& s = trace.requests[1];
  // Long's prompt in two chunks of 5: 0 -> 0.5 -> 1.0 (first token). Then each iteration decodes
  // the long one (1 token) and runs 4 prompt tokens of the short one: 1.0 -> 2.4 -> 3.8, then its
  // last 2 -> 5.0 (its first token); both decode 5.0 -> 6.0, the short one done.
  EXPECT_DOUBLE_EQ(l.first_token_s, 1.0);
  EXPECT_NEAR(s.first_token_s, 5.0, 1e-9);
  EXPECT_NEAR(s.finish_s, 6.0, 1e-9);
  EXPECT_NEAR(l.token_s[1], 2.4, 1e-9);
  EXPECT_NEAR(l.token_s[2], 3.8, 1e-9);
  for (const auto& it : trace.iterations) EXPECT_LE(it.decode_batch + it.prefill_tokens, 5);
}

// Many requests of mixed lengths through a budget that holds only a few at once.
std::vector<TokenRequest> mixed_requests(size_t n, double rate, uint64_t seed) {
  LengthMix mix;
  mix.prompt = {4, 40};
  mix.output = {1, 30};
  return draw_requests(mix, gamma_arrivals(rate, 0.5, n, seed), seed);
}

TEST(TokenSchedulers, TheKvBudgetIsNeverExceededAndEveryRequestGetsAllItsTokens) {
  for (SchedulerKind kind : {SchedulerKind::kStatic, SchedulerKind::kContinuous}) {
    for (int64_t chunk : {int64_t{0}, int64_t{24}}) {
      if (kind == SchedulerKind::kStatic && chunk > 0) continue;
      const auto requests = mixed_requests(120, 2.0, 5);
      SchedulerOptions o = options_of(kind, 8, chunk);
      o.kv_budget_bytes = 3 * 70 * 16;  // three of the longest requests at 16 bytes a position
      VirtualClock clock;
      FakeSlottedGenerator engine(clock, {0.01, 0.002, 0.05, 0.005}, 16);
      const auto trace = serve_token_requests(requests, o, 70, engine, clock);
      SCOPED_TRACE(scheduler_name(kind) + " chunk " + std::to_string(chunk));
      int64_t most_running = 0;
      for (const auto& it : trace.iterations) {
        EXPECT_LE(it.kv_reserved_bytes, o.kv_budget_bytes);
        EXPECT_LE(it.kv_used_bytes, it.kv_reserved_bytes);
        most_running = std::max<int64_t>(most_running, it.running);
      }
      EXPECT_GT(most_running, 1) << "the budget holds more than one request";
      for (size_t i = 0; i < requests.size(); ++i) {
        const auto& r = trace.requests[i];
        ASSERT_EQ(static_cast<int64_t>(r.token_s.size()), requests[i].output) << "request " << i;
        EXPECT_GE(r.admitted_s, r.arrival_s);
        EXPECT_GE(r.first_token_s, r.admitted_s);
        EXPECT_GE(r.finish_s, r.token_s.back());
        EXPECT_TRUE(std::is_sorted(r.token_s.begin(), r.token_s.end()));
      }
      if (kind == SchedulerKind::kContinuous) {
        // The engine saw each request decode exactly output - 1 times, through every move.
        int64_t decoded = 0, expected = 0;
        for (const auto& [id, n] : engine.decoded()) decoded += n;
        for (const auto& r : requests) expected += r.output - 1;
        EXPECT_EQ(decoded, expected);
        for (const auto& r : trace.requests) EXPECT_DOUBLE_EQ(r.finish_s, r.token_s.back());
      }
    }
  }
}

TEST(TokenSchedulers, PromptsEndingTogetherEachKeepTheirOwnSlotThroughTheSwaps) {
  // Four requests waiting at once fill the four slots from the top, end their prompts in the
  // same iteration and move into the decode block one by one: the engine must see every
  // request decode exactly its own output - 1 times.
  const std::vector<TokenRequest> requests = {{0.0, 3, 5}, {0.0, 4, 2}, {0.0, 2, 7},
                                              {0.0, 5, 3}, {0.0, 3, 4}, {0.0, 2, 6}};
  for (int64_t chunk : {int64_t{0}, int64_t{6}}) {
    VirtualClock clock;
    FakeSlottedGenerator engine(clock, {});
    serve_token_requests(requests, options_of(SchedulerKind::kContinuous, 4, chunk), 16, engine,
                         clock);
    // Engine ids number requests in the order of their first prefill call, which is arrival
    // order here.
    ASSERT_EQ(engine.decoded().size(), requests.size()) << "chunk " << chunk;
    for (const auto& [id, decoded] : engine.decoded())
      EXPECT_EQ(decoded, requests[static_cast<size_t>(id)].output - 1)
          << "request " << id << ", chunk " << chunk;
  }
}

TEST(TokenSchedulers, ARequestLargerThanTheBudgetIsRefusedBeforeTheRunWithBothSizes) {
  VirtualClock clock;
  FakeSlottedGenerator engine(clock, {}, 1000);
  LengthMix mix;
  mix.prompt = {100, 100};
  mix.output = {50, 50};
  SchedulerOptions o = options_of(SchedulerKind::kContinuous);
  o.kv_budget_bytes = 149 * 1000;
  try {
    check_admissible(o, engine.kv_bytes_per_position(), engine.max_positions(), mix);
    FAIL() << "a request of 150 positions was admitted under a budget of 149";
  } catch (const UsageError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("150 positions"), std::string::npos) << message;
    EXPECT_NE(message.find("--kv-budget"), std::string::npos) << message;
  }
  o.kv_budget_bytes = 150 * 1000;
  EXPECT_NO_THROW(check_admissible(o, engine.kv_bytes_per_position(), engine.max_positions(), mix));
  o.chunk_tokens = 4;  // not more than the batch of 4
  EXPECT_THROW(check_admissible(o, engine.kv_bytes_per_position(), engine.max_positions(), mix),
               UsageError);
  FakeSlottedGenerator short_context(clock, {}, 1000, 120);
  o.chunk_tokens = 0;
  EXPECT_THROW(check_admissible(o, short_context.kv_bytes_per_position(),
                                short_context.max_positions(), mix),
               UsageError);
}

TEST(TokenMetrics, TtftTpotAndGoodputFollowTheirDefinitionsOnAHandTimedTrace) {
  TokenServeTrace trace;
  auto request = [](double arrival, double admitted, std::vector<double> tokens, double finish) {
    RequestTrace r;
    r.arrival_s = arrival;
    r.admitted_s = admitted;
    r.prompt = 8;
    r.output = static_cast<int64_t>(tokens.size());
    r.first_token_s = tokens.front();
    r.token_s = std::move(tokens);
    r.finish_s = finish;
    return r;
  };
  // TTFT 0.5, TPOT (2.5 - 0.5) / 2 = 1.0: within 1 s / 1 s.
  trace.requests.push_back(request(0.0, 0.1, {0.5, 1.5, 2.5}, 2.5));
  // TTFT 1.5: over the TTFT bound.
  trace.requests.push_back(request(1.0, 2.0, {2.5, 3.0}, 3.0));
  // TTFT 0.5, completes with its batch at 6: TPOT (6 - 3) / 1 = 3.0, over; ITL only 0.2.
  trace.requests.push_back(request(2.5, 2.6, {3.0, 3.2}, 6.0));
  TokenBounds bounds;
  bounds.ttft_s = 1.0;
  bounds.tpot_s = 1.0;
  bounds.percentile = 0.5;
  const TokenRunSummary s = summarize_token_trace(trace, bounds);
  EXPECT_EQ(s.requests, 3u);
  EXPECT_EQ(s.output_tokens, 7);
  EXPECT_DOUBLE_EQ(s.duration_s, 6.0);
  EXPECT_DOUBLE_EQ(s.request_rate, 0.5);
  EXPECT_EQ(s.good, 1u);
  EXPECT_DOUBLE_EQ(s.goodput_rate, 1.0 / 6.0);
  EXPECT_DOUBLE_EQ(s.ttft.p50_s, 0.5);
  EXPECT_DOUBLE_EQ(s.tpot.p50_s, 1.0);
  EXPECT_NEAR(s.queueing_mean_s, (0.1 + 1.0 + 0.1) / 3, 1e-12);
  EXPECT_DOUBLE_EQ(s.itl_p50_s, 0.75);  // gaps 0.2, 0.5, 1.0, 1.0: between the middle two
  EXPECT_EQ(s.ttft.check.over_bound, 1u);
  EXPECT_EQ(s.tpot.check.over_bound, 1u);
}

TEST(TokenSearch, AGenerativeModelsSlowRatesAreTriedWithinItsLongerTrialCap) {
  // GPT-2 small's Offline ceiling on a 2-core VM is about 2 requests/s: a p99 trial's 299 requests
  // at half of it take about 5 minutes to arrive. One-shot serving's 120 s cap would try nothing.
  std::vector<double> tried;
  const auto trial = [&](double rate) {
    tried.push_back(rate);
    return std::pair{static_cast<int>(tried.size()) - 1,
                     rate < 1.5 ? TailVerdict::kMet : TailVerdict::kMissed};
  };
  const ServerSearch capped = search_server_rate(2.17, 0.05, 0.99, kMaxServerTrialS, trial);
  EXPECT_TRUE(tried.empty());
  EXPECT_EQ(capped.found, 0);
  const ServerSearch found = search_server_rate(2.17, 0.05, 0.99, kMaxTokenTrialS, trial);
  ASSERT_FALSE(tried.empty());
  EXPECT_DOUBLE_EQ(tried.front(), 2.17 / 2);
  EXPECT_GT(found.found, 1.4);
  EXPECT_LT(found.found, 1.5);
  EXPECT_EQ(tried[static_cast<size_t>(found.found_run)], found.found);
}

TEST(TokenMetrics, BothBoundsMustHoldForTheRunToHold) {
  EXPECT_EQ(both_verdicts(TailVerdict::kMet, TailVerdict::kMet), TailVerdict::kMet);
  EXPECT_EQ(both_verdicts(TailVerdict::kMet, TailVerdict::kMissed), TailVerdict::kMissed);
  EXPECT_EQ(both_verdicts(TailVerdict::kUndecided, TailVerdict::kMissed), TailVerdict::kMissed);
  EXPECT_EQ(both_verdicts(TailVerdict::kMet, TailVerdict::kUndecided), TailVerdict::kUndecided);
}

}  // namespace
}  // namespace plumb::run
