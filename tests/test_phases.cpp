// Phases everywhere: a generative model's inference step profiled by phase. A tiny fake
// generative model whose prefill and decode run known operators (a matmul of known size only in
// prefill, a linear layer and attention over the KV cache in both or in decode) and that
// preallocates its cache at prefill: operators attributed to the phase whose scope encloses
// them, each phase's time and calls, the phase rows' round trip through the store, the reports'
// per-phase sections, the memory profiler's kv_cache category and bytes per token, and --phase
// refused where there is no generation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>
#include <sstream>

#include "cli_fixture.h"
#include "fake_generative.h"
#include "plumb/analysis/breakdown.h"
#include "plumb/analysis/phase_profile.h"
#include "plumb/analysis/roofline.h"
#include "plumb/cli/phase_option.h"
#include "plumb/core/errors.h"
#include "plumb/core/generation.h"
#include "plumb/core/layer_scope.h"
#include "plumb/core/transformer_shape.h"
#include "plumb/jobs/profile_report.h"
#include "plumb/profile/memory_json.h"
#include "plumb/profile/memory_profiler.h"
#include "plumb/profile/profiler.h"
#include "plumb/store/results_store.h"
#include "plumb/workloads/all_workloads.h"
#include "scratch_dir.h"

namespace plumb {
namespace {

namespace fs = std::filesystem;

using testing::kFakeLmPrefillIn;
using testing::kFakeLmPrefillOut;
using testing::kFakeLmWidth;
constexpr int64_t kPhaseBatch = 2, kPhasePrompt = 6, kPhaseGen = 4;

// The fake's cache per position (kFakeLmWidth floats) as a TransformerShape counts it: K and V
// of one layer of 2 KV heads of 2 dimensions.
TransformerShape phase_fake_shape() {
  TransformerShape s;
  s.layers = 1;
  s.kv_heads = 2;
  s.head_dim = 2;
  return s;
}

Workload phase_fake_workload() {
  return testing::fake_generative_workload("phase_fake_lm", kPhaseBatch, kPhasePrompt, kPhaseGen);
}

run::RunOptions phase_infer_options(const Workload& w) {
  run::RunOptions o = testing::fake_run_options(w);
  o.mode = Mode::kInfer;
  o.max_warmup_s = 2;
  o.max_warmup_iterations = 3;
  return o;
}

// One profile of the fake, shared by the tests that read it.
const profile::ProfileResult& phase_fake_profile() {
  static const profile::ProfileResult result = [] {
    const Workload w = phase_fake_workload();
    return profile::profile_workload(w, phase_infer_options(w), 3);
  }();
  return result;
}

double phase_sum(const profile::StepProfile& p, std::optional<Phase> phase,
                 const std::string& layer, double profile::OpStat::*field) {
  double sum = 0;
  for (const auto& op : p.ops)
    if (analysis::op_phase(op) == phase && (layer.empty() || op.layer == layer)) sum += op.*field;
  return sum;
}

TEST(PhaseProfile, EachPhaseIsTimedWithItsCalls) {
  const auto& r = phase_fake_profile();
  ASSERT_EQ(r.status, run::RunStatus::kOk) << r.message;
  const auto times = analysis::phase_times(r.profile);
  ASSERT_EQ(times.size(), 2u);
  EXPECT_EQ(times[0].phase, Phase::kPrefill);
  EXPECT_DOUBLE_EQ(times[0].calls, 1);
  EXPECT_EQ(times[1].phase, Phase::kDecode);
  EXPECT_DOUBLE_EQ(times[1].calls, kPhaseGen - 1);
  for (const auto& t : times) {
    EXPECT_GT(t.seconds, 0);
    EXPECT_LE(t.seconds, r.profile.step_s);
    EXPECT_DOUBLE_EQ(t.per_call_s(), t.seconds / t.calls);
  }
  EXPECT_LE(times[0].seconds + times[1].seconds, r.profile.step_s);
  // Phase rows are no operators: no breakdown counts them.
  for (const auto& op : r.profile.ops) EXPECT_NE(op.kind, profile::kPhaseRow);
  const auto only = analysis::phase_times(r.profile, Phase::kDecode);
  ASSERT_EQ(only.size(), 1u);
  EXPECT_EQ(only[0].phase, Phase::kDecode);
}

TEST(PhaseProfile, OperatorsAreAttributedToThePhaseThatRanThem) {
  const auto& p = phase_fake_profile().profile;
  const double prefill_macs = kPhaseBatch * kPhasePrompt * kFakeLmPrefillIn * kFakeLmPrefillOut;
  bool prefill_mm = false;
  for (const auto& op : p.ops) {
    const bool is_prefill_mm = op.name == "aten::mm" && op.macs == prefill_macs;
    if (is_prefill_mm) {
      EXPECT_EQ(op.scope, "prefill");
      EXPECT_DOUBLE_EQ(op.calls, 1);
      EXPECT_DOUBLE_EQ(op.flops, 2 * prefill_macs);
      prefill_mm = true;
    }
    // The phase scope is not a layer: operators outside named layers have none.
    EXPECT_EQ(op.layer.find("plumb::"), std::string::npos) << op.layer;
  }
  EXPECT_TRUE(prefill_mm);
  // The linear layer runs once per call of each phase: B x W x W MACs each.
  const double proj_macs = kPhaseBatch * kFakeLmWidth * kFakeLmWidth;
  EXPECT_DOUBLE_EQ(phase_sum(p, Phase::kPrefill, "proj", &profile::OpStat::macs), proj_macs);
  EXPECT_DOUBLE_EQ(phase_sum(p, Phase::kDecode, "proj", &profile::OpStat::macs),
                   (kPhaseGen - 1) * proj_macs);
  EXPECT_DOUBLE_EQ(phase_sum(p, Phase::kPrefill, "attn", &profile::OpStat::calls), 0);
  EXPECT_GT(phase_sum(p, Phase::kDecode, "attn", &profile::OpStat::calls), 0);
}

TEST(PhaseProfile, DecodeBytesCountTheWeightsAndTheKvCacheRead) {
  const auto& p = phase_fake_profile().profile;
  const double calls = kPhaseGen - 1;
  const auto bytes = [&](const std::string& layer) {
    return phase_sum(p, Phase::kDecode, layer, &profile::OpStat::bytes_read) +
           phase_sum(p, Phase::kDecode, layer, &profile::OpStat::bytes_written);
  };
  // A [B, W] x [W, W] linear reads its whole weight and bias each call.
  EXPECT_GE(bytes("proj") / calls, (kFakeLmWidth * kFakeLmWidth + kFakeLmWidth) * 4.0);
  // Attention reads the keys and values of every position so far, each decode call.
  double kv_read = 0;
  for (int64_t pos = kPhasePrompt + 1; pos < kPhasePrompt + kPhaseGen; ++pos)
    kv_read += 2.0 * kPhaseBatch * pos * kFakeLmWidth * 4;
  EXPECT_GE(bytes("attn"), kv_read);
  EXPECT_GT(phase_sum(p, Phase::kDecode, "attn", &profile::OpStat::flops), 0);
}

TEST(PhaseProfile, OnePhaseIsAProfileOfItsOwn) {
  const auto& whole = phase_fake_profile().profile;
  const auto decode = analysis::phase_profile(whole, Phase::kDecode);
  const auto times = analysis::phase_times(whole, Phase::kDecode);
  EXPECT_DOUBLE_EQ(decode.step_s, times.at(0).seconds);
  double self = 0;
  for (const auto& op : decode.ops) {
    EXPECT_EQ(op.scope, "decode");
    self += op.self_s;
  }
  EXPECT_DOUBLE_EQ(decode.op_self_s, self);
  EXPECT_DOUBLE_EQ(decode.overhead_s, decode.step_s - self);
  // Shares are of the phase's time: the rows and the phase's overhead make all of it.
  const auto b = analysis::breakdown(decode, analysis::GroupBy::kLayer);
  double shares = b.overhead_s / decode.step_s;
  for (const auto& row : b.rows) shares += row.time_share;
  EXPECT_NEAR(shares, 1.0, 1e-9);
  profile::StepProfile plain;
  plain.ops = whole.ops;
  EXPECT_FALSE(analysis::has_phases(plain));
  EXPECT_THROW(analysis::phase_profile(plain, Phase::kPrefill), UsageError);
}

class PhaseStoreTest : public testing::ScratchDirTest {};

TEST_F(PhaseStoreTest, PhaseRowsRoundTripAndTheReportsShowEachPhase) {
  const auto& r = phase_fake_profile();
  const Workload w = phase_fake_workload();
  const std::string db = (dir_ / "plumb.db").string();
  store::ResultsStore::open(db)->save_profile(phase_infer_options(w), r, platform::Environment{},
                                              "phases");
  jobs::ProfileJobResult job;
  job.workload = w.info.name;
  job.passes = store::ResultsStore::open(db, true)->load_profiles("phases");
  ASSERT_EQ(job.passes.size(), 1u);
  const auto& back = job.passes[0].result.profile;
  ASSERT_EQ(back.phases.size(), r.profile.phases.size());
  ASSERT_EQ(back.ops.size(), r.profile.ops.size());
  // Each operator comes back in its phase and layer (the store keeps the phase in the layer).
  const auto rows = [](const profile::StepProfile& p) {
    std::multiset<std::string> out;
    for (const auto& op : p.ops) out.insert(op.scope + "|" + op.layer + "|" + op.name);
    return out;
  };
  EXPECT_EQ(rows(back), rows(r.profile));
  for (size_t i = 0; i < back.phases.size(); ++i) {
    EXPECT_EQ(back.phases[i].scope, r.profile.phases[i].scope);
    EXPECT_DOUBLE_EQ(back.phases[i].calls, r.profile.phases[i].calls);
    EXPECT_DOUBLE_EQ(back.phases[i].inclusive_s, r.profile.phases[i].inclusive_s);
  }

  const jobs::ProfileView view{analysis::GroupBy::kLayer, "layer", 0, std::nullopt};
  auto pass = jobs::profile_json(job, view)["passes"][0];
  EXPECT_EQ(pass["phase"], "both");
  ASSERT_EQ(pass["phases"].size(), 2u);
  const auto& decode = pass["phases"][1];
  EXPECT_EQ(decode["phase"], "decode");
  EXPECT_DOUBLE_EQ(decode["calls"].get<double>(), kPhaseGen - 1);
  EXPECT_DOUBLE_EQ(decode["time_per_call_s"].get<double>(),
                   decode["time_s"].get<double>() / (kPhaseGen - 1));
  EXPECT_DOUBLE_EQ(decode["bytes_per_call"].get<double>(),
                   decode["bytes"].get<double>() / (kPhaseGen - 1));
  std::ostringstream text;
  jobs::print_profile(text, job, view);
  EXPECT_NE(text.str().find("[prefill] 1 call(s) per step"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("[decode] 3 call(s) per step"), std::string::npos) << text.str();

  job.phase = Phase::kDecode;
  pass = jobs::profile_json(job, view)["passes"][0];
  EXPECT_EQ(pass["phase"], "decode");
  ASSERT_EQ(pass["phases"].size(), 1u);
  EXPECT_EQ(pass["phases"][0]["phase"], "decode");
  EXPECT_DOUBLE_EQ(pass["flops"].get<double>(), pass["phases"][0]["flops"].get<double>());
  std::ostringstream one;
  jobs::print_profile(one, job, view);
  EXPECT_EQ(one.str().find("[prefill]"), std::string::npos);
}

TEST(PhaseMemory, TheKvCacheIsItsOwnCategoryWithItsBytesPerToken) {
  const Workload w = phase_fake_workload();
  const auto r = profile::profile_memory(w, phase_infer_options(w), profile::MemoryOptions{});
  ASSERT_EQ(r.status, run::RunStatus::kOk) << r.message;
  const auto& b = r.breakdown;
  const int64_t positions = kPhaseBatch * (kPhasePrompt + kPhaseGen);
  const auto kv = b.peak[static_cast<size_t>(profile::MemoryCategory::kKvCache)];
  EXPECT_EQ(kv, positions * kFakeLmWidth * 4);
  EXPECT_DOUBLE_EQ(static_cast<double>(kv),
                   kv_cache_bytes(phase_fake_shape(), kPhaseBatch, kPhasePrompt + kPhaseGen, 4));
  ASSERT_TRUE(b.generation);
  EXPECT_EQ(b.generation->declared_kv_cache_bytes, kv);
  EXPECT_EQ(b.generation->positions(), positions);
  EXPECT_DOUBLE_EQ(profile::kv_cache_bytes_per_token(b), kFakeLmWidth * 4.0);
  ASSERT_EQ(b.phases.size(), 2u);
  EXPECT_EQ(b.phases[0].phase, Phase::kPrefill);
  EXPECT_EQ(b.phases[0].calls, 1);
  EXPECT_EQ(b.phases[1].phase, Phase::kDecode);
  EXPECT_EQ(b.phases[1].calls, kPhaseGen - 1);
  // The prefill made the cache; each phase's peak holds it once made.
  EXPECT_GE(b.phases[0].bytes_allocated, kv);
  EXPECT_GE(b.phases[1].peak, kv);
  EXPECT_EQ(b.phases[1].at_peak[static_cast<size_t>(profile::MemoryCategory::kKvCache)], kv);
  // The stored form keeps it all.
  const auto back = profile::breakdown_from_json(nlohmann::json::parse(profile::to_json(b).dump()));
  EXPECT_EQ(back.peak, b.peak);
  ASSERT_EQ(back.phases.size(), 2u);
  EXPECT_EQ(back.phases[1].peak, b.phases[1].peak);
  ASSERT_TRUE(back.generation);
  EXPECT_EQ(back.generation->positions(), positions);
}

TEST(PhaseRoofline, DramFractionIsTheAchievedRateOverTheDramRoof) {
  analysis::Ceilings c;
  c.peak_flops = 1e12;
  c.memory = {{"l2", 400e9, 2 << 20}, {"dram", 50e9, 0}};
  analysis::WorkItem gemv{"proj", 2e6, 1e6, 1e6, 1e6 / 30e9, "fp32"};  // 30 GB/s
  const auto p = analysis::place(gemv, c);
  EXPECT_EQ(p.bound, "memory:dram");
  EXPECT_NEAR(p.dram_fraction, 0.6, 1e-12);
  gemv.seconds = 0;
  EXPECT_TRUE(std::isnan(analysis::place(gemv, c).dram_fraction));
}

Workload phase_transformer_workload(bool causal) {
  Workload w = testing::test_workload_shell("phase_tf", "a transformer", 1);
  w.transformer_shape = [causal](const Config&) {
    TransformerShape s = phase_fake_shape();
    s.causal = causal;
    return s;
  };
  return w;
}

TEST(PhaseOption, OnePhaseNeedsAGenerativeWorkloadInInference) {
  const Workload lm = phase_transformer_workload(true);
  const Config c = lm.default_config();
  EXPECT_EQ(cli::parse_phase_option("both", lm, c, {Mode::kTrain}), std::nullopt);
  EXPECT_EQ(cli::parse_phase_option("decode", lm, c, {Mode::kInfer}), Phase::kDecode);
  EXPECT_EQ(cli::parse_phase_option("prefill", lm, c, {Mode::kInfer}), Phase::kPrefill);
  EXPECT_THROW(cli::parse_phase_option("decode", lm, c, {Mode::kTrain}), UsageError);
  EXPECT_THROW(cli::parse_phase_option("decode", lm, c, {Mode::kInfer, Mode::kTrain}), UsageError);
  EXPECT_THROW(cli::parse_phase_option("tokens", lm, c, {Mode::kInfer}), UsageError);
  const Workload encoder = phase_transformer_workload(false);
  EXPECT_THROW(cli::parse_phase_option("prefill", encoder, c, {Mode::kInfer}), UsageError);
  const Workload plain = testing::test_workload_shell("phase_plain", "no transformer", 1);
  EXPECT_THROW(cli::parse_phase_option("decode", plain, c, {Mode::kInfer}), UsageError);
}

// The real gpt2 at its tiny size: each linear layer of a decode call reads its whole weight
// (a memory-bound GEMV), and the KV cache it preallocates is what its dimensions say.
run::RunOptions phase_gpt2_options(const Workload& w) {
  run::RunOptions o = phase_infer_options(w);
  o.workload = w.info.name;
  o.config = plumb::tiny_config(w);
  return o;
}

TEST(PhaseGpt2, DecodeLinearLayersReadAtLeastTheirWeights) {
  const Workload& w = workloads::default_registry().get("gpt2");
  const run::RunOptions o = phase_gpt2_options(w);
  const auto r = profile::profile_workload(w, o, 1);
  ASSERT_EQ(r.status, run::RunStatus::kOk) << r.message;
  const auto decode = analysis::phase_profile(r.profile, Phase::kDecode);
  const double calls = analysis::phase_times(r.profile, Phase::kDecode).at(0).calls;
  EXPECT_DOUBLE_EQ(calls, o.config.get_int("gen") - 1);
  const auto model = w.build(o.config, torch::Device(torch::kCPU));
  int checked = 0;
  for (const auto& item : model->module().named_parameters()) {
    const std::string& name = item.key();
    const std::string suffix = ".weight";
    if (item.value().dim() != 2 || name.size() <= suffix.size() ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    const std::string layer = name.substr(0, name.size() - suffix.size());
    double bytes = 0, macs = 0;
    for (const auto& op : decode.ops)
      if (op.layer == layer) {
        bytes += op.bytes_read + op.bytes_written;
        macs += op.macs;
      }
    if (macs == 0) continue;  // not a matrix product of its own (the tied embedding)
    EXPECT_GE(bytes / calls, static_cast<double>(item.value().numel()) * 4) << layer;
    ++checked;
  }
  EXPECT_GE(checked, 4 * 2);  // q, k, v, o (and the MLP's) of each of the two layers
}

TEST(PhaseGpt2, TheKvCacheCategoryIsTheCacheItsDimensionsGive) {
  const Workload& w = workloads::default_registry().get("gpt2");
  const run::RunOptions o = phase_gpt2_options(w);
  const auto r = profile::profile_memory(w, o, profile::MemoryOptions{});
  ASSERT_EQ(r.status, run::RunStatus::kOk) << r.message;
  const int64_t batch = o.config.get_int("batch");
  const int64_t positions = o.config.get_int("prompt") + o.config.get_int("gen");
  const auto kv = r.breakdown.peak[static_cast<size_t>(profile::MemoryCategory::kKvCache)];
  EXPECT_DOUBLE_EQ(static_cast<double>(kv),
                   kv_cache_bytes(w.transformer_shape(o.config), batch, positions, 4));
  ASSERT_TRUE(r.breakdown.generation);
  EXPECT_EQ(r.breakdown.generation->declared_kv_cache_bytes, kv);
  EXPECT_DOUBLE_EQ(profile::kv_cache_bytes_per_token(r.breakdown),
                   static_cast<double>(kv) / static_cast<double>(batch * positions));
}

class PhaseCli : public testing::Cli {};

TEST_F(PhaseCli, OnePhaseOfAWorkloadThatDoesNotGenerateIsRefusedAndNothingStored) {
  const std::string model = "autoenc --mode infer --batch 2 --set hidden=16 --set latent=4";
  for (const std::string command : {"profile", "roofline", "memory"}) {
    const auto r = plumb(command + " " + model + " --phase decode --db " + db());
    EXPECT_EQ(r.code, 2) << command << ": " << r.err;
    EXPECT_NE(r.err.find("does not generate tokens"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(fs::exists(db())) << command;
  }
}

}  // namespace
}  // namespace plumb
