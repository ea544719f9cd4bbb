// The generative workloads through the command line: plumb run's phases in JSON and in the
// store, plumb info's per-token counts, and the one-line refusals (a prompt beyond the context,
// gen 0, a preset beyond this machine's memory) that store nothing.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_fixture.h"

namespace plumb::testing {
namespace {

// gpt2 at its tiny size (2 layers of width 32, 16 positions).
const char* kTinyGpt2 = "--set layers=2,d_model=32,heads=4,ffn=64,vocab=97,positions=16,seq=8";

class CliLlm : public Cli {};

TEST_F(CliLlm, RunOfAGenerativeModelReportsBothPhasesAndStoresEveryCall) {
  const auto j =
      plumb_json(std::string("run gpt2 --mode infer ") + kTinyGpt2 +
                 " --set prompt=6,gen=4 --threads 1 --max-time 2 --min-samples 5 --target-ci 0.5");
  ASSERT_EQ(j["status"], "ok") << j.dump();
  EXPECT_EQ(j["throughput_unit"], "tokens/s");
  ASSERT_TRUE(j.contains("generation")) << j.dump();
  const auto& g = j["generation"];
  EXPECT_EQ(g["prompt"], 6);
  EXPECT_EQ(g["gen"], 4);
  EXPECT_GT(g["kv_cache_bytes"].get<double>(), 0);
  for (const char* rate : {"prefill_tokens_per_s", "decode_tokens_per_s"})
    EXPECT_GT(g[rate].get<double>(), 0) << rate;
  for (const char* summary : {"ttft_s", "tpot_s", "inter_token_s"})
    EXPECT_GT(g[summary]["mean"].get<double>(), 0) << summary;
  // Each measured step is one prefill call and gen - 1 = 3 decode calls, all stored.
  const int64_t steps = j["step_time"]["n"].get<int64_t>();
  EXPECT_EQ(g["ttft_samples"].size(), static_cast<size_t>(steps));
  EXPECT_EQ(g["decode_samples"].size(), static_cast<size_t>(3 * steps));
  EXPECT_EQ(count_rows(db(), "SELECT count(*) FROM run_generations"), 1);
  EXPECT_EQ(count_rows(db(), "SELECT count(*) FROM generation_samples"), 4 * steps);
  // The report tables the run's phases.
  const Result report = plumb("report --db " + db() + " --output " + (dir_ / "r.html").string());
  ASSERT_EQ(report.code, 0) << report.err;
  EXPECT_NE(slurp(dir_ / "r.html").find("Generation: prefill and decode"), std::string::npos);
}

TEST_F(CliLlm, InfoCountsPrefillAndDecodePerTokenAtTheContextAsked) {
  const auto info = [&](const std::string& args) {
    const Result r = plumb("info gpt2 " + std::string(kTinyGpt2) + " --json " + args);
    EXPECT_EQ(r.code, 0) << r.err;
    return nlohmann::json::parse(r.out);
  };
  const auto j = info("--set prompt=6,gen=4");
  ASSERT_TRUE(j.contains("transformer")) << j.dump();
  const auto& rows = j["transformer"]["per_token"];
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0]["phase"], "prefill");
  EXPECT_EQ(rows[0]["context"], 6);
  EXPECT_EQ(rows[1]["phase"], "decode");
  EXPECT_EQ(rows[1]["context"], 10);  // prompt + gen by default
  // A decode token at batch 1 reads every weight for two FLOPs each: far below 1 FLOP/byte.
  EXPECT_LT(rows[1]["flops_per_byte"].get<double>(), 1.0);
  EXPECT_GT(rows[0]["flops_per_byte"].get<double>(), rows[1]["flops_per_byte"].get<double>());
  const auto at = info("--set prompt=6,gen=4 --context 12");
  EXPECT_EQ(at["transformer"]["per_token"][1]["context"], 12);
  EXPECT_GT(at["transformer"]["per_token"][1]["kv_read_bytes"].get<double>(),
            rows[1]["kv_read_bytes"].get<double>());
  expect_usage_error(std::string("info gpt2 ") + kTinyGpt2 + " --set prompt=6,gen=4 --context 17",
                     "--context 17");
}

TEST_F(CliLlm, PromptsBeyondTheContextGenZeroAndPresetsBeyondMemoryAreRefused) {
  const std::string run = std::string("run gpt2 --mode infer ") + kTinyGpt2 + " --db " + db();
  expect_usage_error(run + " --set gen=0", "gen");
  // Llama-3-8B serving 1,000 requests of 8,192 positions holds a 2.1 TB KV cache (2 x 32 layers
  // x 8 KV heads x 128 x 4 bytes per position): beyond any machine, whatever its memory;
  // refused from its dimensions before anything is built.
  expect_usage_error(
      "run llama --set preset=llama-3-8b,prompt=8000,gen=192 --mode infer --batch 1000 --db " +
          db(),
      "needs at least");
  EXPECT_FALSE(fs::exists(db())) << "a refused run must not create a database";
  // The context is the model's own check, at build: the store is open by then, and empty.
  expect_usage_error(run + " --set prompt=14,gen=4", "18 positions exceed the context 16");
  EXPECT_EQ(count_rows(db(), "SELECT count(*) FROM runs"), 0);
}

}  // namespace
}  // namespace plumb::testing
