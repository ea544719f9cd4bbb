// plumb characterize over the generative suite: the plan of the llm suite (a profile of both
// generation phases, the inference memory mix with its KV cache, decode on the memory roof for
// the family small enough), and a tiny pass that stores the generation figures, both phases'
// operators and the decode roofline's runs, resumed without repeating what finished (killed
// between items and in the middle of the decode sweep), and drawn by the report.
#include <gtest/gtest.h>

#include <signal.h>

#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include <SQLiteCpp/SQLiteCpp.h>
#include <nlohmann/json.hpp>

#include "cli_fixture.h"
#include "plumb/jobs/characterize_plan.h"
#include "plumb/platform/environment.h"
#include "plumb/platform/probe.h"
#include "plumb/workloads/all_workloads.h"
#include "report_fixture.h"

namespace plumb::testing {
namespace {

std::vector<std::string> llm_plan_labels(const std::string& size) {
  const auto items = jobs::plan_items(workloads::default_registry().list("llm"),
                                      {Dtype::kBf16, Dtype::kInt8}, size);
  std::vector<std::string> labels;
  for (const auto& item : items) labels.push_back(item.label());
  return labels;
}

bool has_label(const std::vector<std::string>& labels, const std::string& label) {
  for (const auto& l : labels)
    if (l == label) return true;
  return false;
}

TEST(CharacterizeLlmPlan, ProfilesBothPhasesTheKvCacheAndDecodeOnTheRoof) {
  for (const char* size : {"suite", "tiny"}) {
    const auto labels = llm_plan_labels(size);
    // gpt2 trains and generates: both modes' runs and profiles, the inference profile of both
    // phases, the training and the inference memory mix, both precisions, the decode roofline.
    for (const char* l : {"gpt2 run train", "gpt2 run infer", "gpt2 profile train",
                          "gpt2 profile infer (prefill and decode)", "gpt2 memory train",
                          "gpt2 memory infer", "gpt2 precision infer bf16",
                          "gpt2 precision infer int8", "gpt2 decode roofline (3 sizes at batch 1)",
                          "llama run infer", "llama profile infer (prefill and decode)",
                          "llama memory infer", "llama precision infer int8", "bert run train",
                          "bert profile infer", "bert memory train", "bert precision infer bf16"})
      EXPECT_TRUE(has_label(labels, l)) << size << ": no " << l;
    // Llama serves only; its third preset (llama-2-7b, 27 GB of fp32 weights) is beyond the
    // decode item's sizes; BERT is an encoder: no phases, no KV cache, no decode.
    for (const char* l : {"llama run train", "llama decode roofline (3 sizes at batch 1)",
                          "bert profile infer (prefill and decode)", "bert memory infer",
                          "bert decode roofline (3 sizes at batch 1)"})
      EXPECT_FALSE(has_label(labels, l)) << size << ": " << l;
    EXPECT_EQ(labels.size(), 9u + 5u + 7u) << size;
  }
  const Workload& gpt2 = workloads::default_registry().get("gpt2");
  EXPECT_EQ(jobs::characterize_decode_sizes(gpt2, "suite"),
            (std::vector<std::vector<std::string>>{
                {"preset=small"}, {"preset=medium"}, {"preset=large"}}));
  EXPECT_EQ(jobs::characterize_decode_sizes(gpt2, "tiny"),
            (std::vector<std::vector<std::string>>{{"layers=1"}, {"layers=2"}, {"layers=3"}}));
  EXPECT_TRUE(
      jobs::characterize_decode_sizes(workloads::default_registry().get("llama"), "suite").empty());
}

// Runs of the pass's decode item, by the size they ran: how many of each.
std::multiset<std::string> decode_runs(const std::string& db) {
  std::multiset<std::string> out;
  SQLite::Database d(db, SQLite::OPEN_READONLY);
  SQLite::Statement q(d,
                      "SELECT json_extract(config_json, '$.layers') FROM runs WHERE tag = "
                      "'characterize:quick/decode'");
  while (q.executeStep()) out.insert(q.getColumn(0).getString());
  return out;
}

TEST_F(Cli, CharacterizeGenerativeStoresBothPhasesAndTheDecodeRoofAndResumes) {
  {
    // The machine's roofs, so that the decode item does not measure a probe.
    auto probe = report_probe();
    probe.machine = platform::machine_key(platform::capture_environment(1));
    probe.document["plumb_probe_version"] = platform::kProbeDocumentVersion;
    probe.document["max_threads"] = 1;
    store::ResultsStore::open(db())->save_probe(probe);
  }
  const std::string pass =
      "characterize gpt2 --quick --size tiny --dtypes bf16 --threads 1 --max-time 0.3 "
      "--max-warmup-time 0.3 --db " +
      db();
  // 8 items: runs and profiles of both modes, two memory passes, bf16, the decode roofline.
  // Killed as the decode item starts, then again after its first size is stored.
  setenv("PLUMB_KILL_AT", "characterize-item:8", 1);
  const auto killed = plumb(pass);
  ASSERT_EQ(killed.code, 128 + SIGKILL) << killed.err;
  EXPECT_TRUE(decode_runs(db()).empty());
  setenv("PLUMB_KILL_AT", "storing:2", 1);
  const auto killed_in_sweep = plumb(pass);
  unsetenv("PLUMB_KILL_AT");
  ASSERT_EQ(killed_in_sweep.code, 128 + SIGKILL) << killed_in_sweep.err;
  EXPECT_NE(killed_in_sweep.err.find("7 already stored, 1 to measure"), std::string::npos)
      << killed_in_sweep.err;
  EXPECT_EQ(decode_runs(db()), std::multiset<std::string>{"1"});

  const auto r = plumb(pass + " --json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("the stored run"), std::string::npos) << r.err;  // size 1 not again
  EXPECT_EQ(decode_runs(db()), (std::multiset<std::string>{"1", "2", "3"}));
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc.at("items"), 8);
  EXPECT_EQ(doc.at("already_stored"), 7);
  EXPECT_EQ(doc.at("measured"), 1);
  const auto& w = doc.at("workloads").at(0);

  // The generation's figures, stored with the inference run.
  const auto& g = w.at("runs").at("infer").at("generation");
  for (const char* key : {"ttft_s", "tpot_s", "prefill_tokens_per_s", "decode_tokens_per_s"})
    EXPECT_GT(g.at(key).get<double>(), 0) << key << g;
  EXPECT_EQ(g.at("prompt"), 6);
  EXPECT_EQ(g.at("gen"), 4);
  // The inference profile's two phases, each with what bounds it; the training one has none.
  const auto& phases = w.at("profiles").at("infer").at("phases");
  ASSERT_EQ(phases.size(), 2u) << phases;
  EXPECT_EQ(phases[0].at("phase"), "prefill");
  EXPECT_EQ(phases[1].at("phase"), "decode");
  EXPECT_EQ(phases[0].at("calls"), 1);
  EXPECT_EQ(phases[1].at("calls"), 3);  // gen - 1
  for (const auto& p : phases) {
    EXPECT_GT(p.at("seconds").get<double>(), 0) << p;
    EXPECT_GT(p.at("bound").at("category_share").get<double>(), 0) << p;
  }
  EXPECT_FALSE(w.at("profiles").at("train").contains("phases"));
  // The store holds operators of both phases in the pass's inference profile.
  for (const char* phase : {"plumb::prefill", "plumb::decode"})
    EXPECT_GT(count_rows(db(), std::string("SELECT count(*) FROM op_stats JOIN profiles ON "
                                           "profiles.id = op_stats.profile_id WHERE "
                                           "profiles.mode = 'infer' AND profiles.tag = "
                                           "'characterize:quick' AND op_stats.layer LIKE '") +
                                   phase + "%'"),
              0)
        << phase;
  // The training step's mix, and inference's KV cache: 2 x layers x heads x head_dim fp32
  // values per position (tiny: 2 layers, d_model 32) = 512 bytes per token of context.
  EXPECT_EQ(w.at("memory").at("mode"), "train");
  EXPECT_EQ(w.at("kv_cache").at("bytes_per_token").get<double>(), 2 * 2 * 32 * 4);
  EXPECT_EQ(w.at("kv_cache").at("bytes"), 2 * 2 * 32 * 4 * 2 * (6 + 4));
  // The decode roofline: three sizes, more bytes per token with more layers, and a fit.
  const auto& decode = w.at("decode");
  ASSERT_EQ(decode.at("points").size(), 3u) << decode;
  EXPECT_LT(decode.at("points")[0].at("bytes_per_token").get<double>(),
            decode.at("points")[2].at("bytes_per_token").get<double>());
  EXPECT_FALSE(decode.at("fit").is_null()) << decode;
  EXPECT_GE(decode.at("fit").at("r_squared").get<double>(), 0);

  // Nothing left: a further pass measures nothing, and the text says what it stored.
  const auto again = plumb(pass);
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_NE(again.err.find("8 already stored, 0 to measure"), std::string::npos) << again.err;
  EXPECT_EQ(decode_runs(db()).size(), 3u);
  for (const char* text : {"    prefill (", "    decode (", "generation (infer)",
                           "gpt2 decode at batch 1: preset=small,layers=1 "})
    EXPECT_NE(again.out.find(text), std::string::npos) << text << '\n' << again.out;

  // The report draws the generation table and decode on the memory roof from this database.
  const std::string html = (dir_ / "r.html").string();
  const auto report = plumb("report --db " + db() + " -o " + html);
  ASSERT_EQ(report.code, 0) << report.err;
  const std::string page = slurp(html);
  for (const char* text :
       {"Generation: prefill and decode", "Decode on the memory roof", "id=\"card-gpt2\""})
    EXPECT_NE(page.find(text), std::string::npos) << text;
}

}  // namespace
}  // namespace plumb::testing
