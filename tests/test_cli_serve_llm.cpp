// plumb serve on a generative workload through the command line: a tiny gpt2 served token by
// token under each scheduler (the session, its measurements, every request and engine iteration
// stored; JSON with the TTFT and TPOT tails and goodput), and the one-line refusals that store
// nothing (negative lengths, an empty length file, a bound without a unit, a request larger than
// the KV budget, a one-shot model's flags).
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_fixture.h"

namespace plumb::testing {
namespace {

// gpt2 at its tiny size (2 layers of width 32, 16 positions), short requests.
const std::string kTinyServe =
    "serve gpt2 --set layers=2,d_model=32,heads=4,ffn=64,vocab=97,positions=16 --threads 1 "
    "--prompt-tokens 2-6 --output-tokens 2-6 --max-batch 4 --duration 0.5";

class CliServeLlm : public Cli {
 protected:
  int64_t sessions() const {
    if (!fs::exists(db())) return 0;
    return count_rows(db(), "SELECT count(*) FROM serve_sessions");
  }
};

TEST_F(CliServeLlm, AFixedRateIsServedTokenByTokenAndEveryRequestIsStored) {
  for (const char* scheduler : {"static", "continuous"}) {
    const auto j =
        plumb_json(kTinyServe + " --qps 40 --ttft 5s --tpot 1s --scheduler " + scheduler);
    SCOPED_TRACE(scheduler);
    EXPECT_EQ(j["kind"], "token") << j.dump();
    EXPECT_EQ(j["scheduler"], scheduler);
    ASSERT_EQ(j["measurements"].size(), 1u) << j.dump();
    const auto& m = j["measurements"][0];
    EXPECT_EQ(m["role"], "server");
    // At least the 299 requests a p99 verdict needs.
    EXPECT_GE(m["requests"].get<int64_t>(), 299);
    EXPECT_GT(m["output_token_rate"].get<double>(), 0);
    EXPECT_GT(m["ttft"]["p50_ms"].get<double>(), 0);
    EXPECT_LE(m["ttft"]["p50_ms"].get<double>(), m["ttft"]["p99_ms"].get<double>());
    EXPECT_GT(m["tpot"]["tail_ms"].get<double>(), 0);
    EXPECT_TRUE(m["verdict"] == "met" || m["verdict"] == "missed" || m["verdict"] == "undecided");
  }
  EXPECT_EQ(sessions(), 2);
  EXPECT_EQ(count_rows(db(), "SELECT count(*) FROM serve_sessions WHERE kind = 'token'"), 2);
  // Every request, with its times in order, and the engine's iterations.
  EXPECT_GE(count_rows(db(), "SELECT count(*) FROM serve_requests"), 2 * 299);
  EXPECT_EQ(count_rows(db(),
                       "SELECT count(*) FROM serve_requests WHERE NOT (arrival_s <= admitted_s AND "
                       "admitted_s <= first_token_s AND first_token_s <= finish_s)"),
            0);
  EXPECT_GT(count_rows(db(), "SELECT count(*) FROM serve_iterations"), 0);
  // No iteration decodes more requests than there are slots (--max-batch).
  EXPECT_LE(count_rows(db(), "SELECT max(decode_batch) FROM serve_iterations"), 4);
}

TEST_F(CliServeLlm, OfflineGivesTheTokenThroughputCeiling) {
  const auto j = plumb_json(kTinyServe + " --scenario offline");
  ASSERT_EQ(j["measurements"].size(), 1u) << j.dump();
  const auto& m = j["measurements"][0];
  EXPECT_EQ(m["role"], "offline");
  EXPECT_GT(m["output_token_rate"].get<double>(), 0);
  EXPECT_GT(m["mean_batch"].get<double>(), 1.0) << "requests waiting together decode together";
}

TEST_F(CliServeLlm, BadInputIsOneLineExitTwoAndStoresNothing) {
  const std::string base = kTinyServe + " --db " + db();
  const auto refused = [&](const std::string& args, const std::string& needle) {
    const Result r = plumb(base + " " + args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << args << "\n" << r.err;
    EXPECT_TRUE(r.out.empty()) << args;
    // One line.
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << args << "\n" << r.err;
    EXPECT_EQ(sessions(), 0) << args;
  };
  refused("--prompt-tokens -5", "cannot be negative");
  refused("--output-tokens 8-2", "low end is above the high end");
  refused("--ttft 2", "unit");
  refused("--tpot 200", "unit");
  refused("--kv-budget 1KiB", "--kv-budget");
  refused("--p99 20ms", "does not apply to gpt2");
  refused("--scenario single-stream", "offline or server");
  refused("--burstiness 0", "--burstiness");
  refused("--scheduler fifo", "use static or continuous");
  refused("--prompt-tokens 12 --output-tokens 8", "context");
  const auto empty = dir_ / "empty.csv";
  std::ofstream(empty) << "# no pairs\n";
  const Result r = plumb("serve gpt2 --qps 10 --lengths " + empty.string() + " --db " + db());
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("no 'prompt_tokens,output_tokens' line"), std::string::npos) << r.err;
  EXPECT_EQ(sessions(), 0);
}

TEST_F(CliServeLlm, TokenFlagsOnAOneShotModelAreRefused) {
  const Result r = plumb("serve autoenc --ttft 2s --db " + db());
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("applies to generative workloads"), std::string::npos) << r.err;
  EXPECT_EQ(sessions(), 0);
}

}  // namespace
}  // namespace plumb::testing
