// The tuning search of plumb tune without a real workload: the space (every combination, stock
// first), successive halving on synthetic throughputs (it finds the best point with far fewer
// trials than the grid, keeps to its budget, drops failed and over-bound points), the
// contribution points, the run-layer space (which factors exist, what a point runs) and
// execution settings (engine and heap: parsed, applied, restored, in the reproducer line), and
// the typed result read back from the stored document byte for byte.
#include <gtest/gtest.h>

#include <ATen/Context.h>

#include <chrono>
#include <cmath>
#include <map>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "plumb/analysis/tune_search.h"
#include "plumb/core/errors.h"
#include "plumb/core/execution_settings.h"
#include "plumb/core/json_text.h"
#include "plumb/core/outcome.h"
#include "plumb/run/runner.h"
#include "plumb/run/step_loop.h"
#include "plumb/run/tune_trials.h"
#include "plumb/store/tune_result.h"
#include "plumb/workloads/all_workloads.h"

namespace plumb::analysis {
namespace {

std::vector<TuneFactor> three_factors() {
  return {
      {"threads", {"2", "1"}}, {"dtype", {"fp32", "bf16", "int8"}}, {"heap", {"keep", "return"}}};
}

// Throughput of a point: a product of per-factor effects, so the best point is known.
double synthetic_throughput(const TunePoint& p) {
  static const std::vector<std::vector<double>> effect = {
      {1.0, 0.55}, {1.0, 2.5, 4.0}, {1.0, 0.97}};
  double t = 100;
  for (size_t f = 0; f < p.size(); ++f) t *= effect[f][p[f]];
  return t;
}

// Measures with the synthetic throughputs; each trial "takes" steps x 0.1 s plus 1 s to build.
struct FakeMeasure {
  size_t trials = 0;
  std::set<TunePoint> failing;
  std::vector<std::vector<TunePoint>> calls;
  std::vector<TrialOutcome> operator()(const std::vector<TunePoint>& points, size_t steps) {
    calls.push_back(points);
    std::vector<TrialOutcome> out;
    for (const auto& p : points) {
      ++trials;
      TrialOutcome o;
      o.outcome = Outcome::supported_if(failing.count(p) == 0, "unsupported in int8: no kernel");
      o.throughput = o.outcome.ok() ? synthetic_throughput(p) : 0;
      o.step_s = o.outcome.ok() ? 8.0 / o.throughput : 0;  // batch 8
      o.steps = steps;
      o.seconds = 1 + 0.1 * static_cast<double>(steps);
      out.push_back(o);
    }
    return out;
  }
};

TEST(TuneSpace, AllPointsIsTheWholeProductWithStockFirst) {
  const auto factors = three_factors();
  const auto points = all_points(factors);
  EXPECT_EQ(points.size(), 2u * 3u * 2u);
  EXPECT_EQ(points.front(), TunePoint({0, 0, 0}));
  EXPECT_EQ(std::set<TunePoint>(points.begin(), points.end()).size(), points.size());
  EXPECT_EQ(point_text(factors, points.front()), "stock");
  EXPECT_EQ(point_text(factors, {1, 2, 0}), "threads=1 dtype=int8");
  EXPECT_EQ(all_points({}).size(), 1u);  // nothing to vary: stock alone
}

TEST(TuneSearch, SuccessiveHalvingFindsTheBestWithFewerTrialsThanTheGrid) {
  const auto points = all_points(three_factors());
  FakeMeasure fake;
  HalvingOptions o;
  o.budget_s = 1000;
  const auto r = successive_halving(points, std::ref(fake), o);
  ASSERT_FALSE(r.ranking.empty());
  EXPECT_EQ(points[r.ranking.front()], TunePoint({0, 2, 0}));  // 2 threads, int8, keep
  // 12 points, then ceil(12/3) = 4, then 2 (ceil(4/3)), then 1: four rungs.
  ASSERT_EQ(r.rungs.size(), 4u);
  EXPECT_EQ(r.rungs[0].points.size(), 12u);
  EXPECT_EQ(r.rungs[1].points.size(), 4u);
  EXPECT_EQ(r.rungs[1].steps, 9u);  // eta x the first rung's 3 steps
  EXPECT_EQ(r.rungs[2].points.size(), 2u);
  EXPECT_EQ(r.trials, 12u + 4u + 2u + 1u);
  // The time the trials report, summed.
  double seconds = 0;
  for (const auto& rung : r.rungs) seconds += rung.seconds;
  EXPECT_DOUBLE_EQ(r.seconds, seconds);
  // The survivors of a rung are the previous rung's fastest.
  for (size_t p : r.rungs[1].points) EXPECT_GE(synthetic_throughput(points[p]), 100 * 2.5 * 0.97);
}

TEST(TuneSearch, AFullRungThatDoesNotFitTheBudgetIsNotStarted) {
  const auto points = all_points(three_factors());
  FakeMeasure fake;
  HalvingOptions o;
  o.budget_s = 20;  // rung 0 takes 12 x 1.3 = 15.6 s; rung 1 is projected at 4 x 3.9 s
  const auto r = successive_halving(points, std::ref(fake), o);
  ASSERT_EQ(r.rungs.size(), 1u);
  EXPECT_NE(r.stop_reason.find("budget"), std::string::npos) << r.stop_reason;
  EXPECT_LE(r.seconds, 20);
  // The ranking is rung 0's, fastest first.
  ASSERT_EQ(r.ranking.size(), 12u);
  EXPECT_EQ(points[r.ranking.front()], TunePoint({0, 2, 0}));
  for (size_t i = 1; i < r.ranking.size(); ++i)
    EXPECT_GE(synthetic_throughput(points[r.ranking[i - 1]]),
              synthetic_throughput(points[r.ranking[i]]));
}

TEST(TuneSearch, FailedAndOverBoundPointsLeaveTheSearch) {
  const auto factors = three_factors();
  const auto points = all_points(factors);
  FakeMeasure fake;
  for (const auto& p : points)
    if (p[1] == 2) fake.failing.insert(p);  // int8 has no kernel here
  HalvingOptions o;
  // Step time = 8 / throughput: bf16 at 2 threads with keep steps 0.032 s; with the bound at
  // 0.035 s only 2-thread bf16 points (keep 0.032 s, return 0.033 s) are within it.
  o.latency_bound_s = 0.035;
  const auto r = successive_halving(points, std::ref(fake), o);
  ASSERT_FALSE(r.ranking.empty());
  for (size_t p : r.ranking) {
    EXPECT_NE(points[p][1], 2u);
    EXPECT_LE(8.0 / synthetic_throughput(points[p]), 0.035);
  }
  EXPECT_EQ(points[r.ranking.front()], TunePoint({0, 1, 0}));
  EXPECT_EQ(latest_outcome(r, r.ranking.front())->throughput,
            synthetic_throughput(points[r.ranking.front()]));
}

TEST(TuneSearch, NothingWithinTheBoundGivesNoRankingAndTheQuickestPoint) {
  const auto points = all_points(three_factors());
  FakeMeasure fake;
  for (const auto& p : points)
    if (p[1] == 2) fake.failing.insert(p);
  HalvingOptions o;
  o.latency_bound_s = 1e-6;
  const auto r = successive_halving(points, std::ref(fake), o);
  EXPECT_TRUE(r.ranking.empty());
  EXPECT_EQ(r.rungs.size(), 1u);
  // The closest to the bound among those that ran: the fastest that did not fail (bf16).
  const size_t quickest = quickest_point(r, points.size());
  ASSERT_LT(quickest, points.size());
  EXPECT_EQ(points[quickest], TunePoint({0, 1, 0}));
}

TEST(TuneSearch, BadOptionsAreUsageErrors) {
  const auto points = all_points(three_factors());
  FakeMeasure fake;
  HalvingOptions o;
  o.eta = 1;
  EXPECT_THROW(successive_halving(points, std::ref(fake), o), UsageError);
  o = HalvingOptions{};
  o.budget_s = 0;
  EXPECT_THROW(successive_halving(points, std::ref(fake), o), UsageError);
  EXPECT_EQ(fake.trials, 0u);
}

TEST(TuneSearch, ContributionPointsChangeOneFactorEachWay) {
  const TunePoint stock = {0, 0, 0};
  const TunePoint best = {0, 2, 1};
  const auto points = contribution_points(stock, best);
  ASSERT_EQ(points.size(), 4u);  // two differing factors, each alone and each removed
  std::map<std::pair<size_t, bool>, TunePoint> by;
  for (const auto& p : points) by[{p.factor, p.from_stock}] = p.point;
  EXPECT_EQ(by.at({1, true}), TunePoint({0, 2, 0}));
  EXPECT_EQ(by.at({1, false}), TunePoint({0, 0, 1}));
  EXPECT_EQ(by.at({2, true}), TunePoint({0, 0, 1}));
  EXPECT_EQ(by.at({2, false}), TunePoint({0, 2, 0}));
  EXPECT_TRUE(contribution_points(stock, stock).empty());
}

}  // namespace
}  // namespace plumb::analysis

namespace plumb::run {
namespace {

RunOptions stock_options() {
  const auto& w = workloads::default_registry().get("autoenc");
  RunOptions o;
  o.workload = "autoenc";
  o.mode = Mode::kInfer;
  o.config = w.default_config();
  o.config.set_int("batch", 8);
  o.threads = 4;
  return o;
}

std::vector<std::string> factor_names(const TuneSpace& s) {
  std::vector<std::string> names;
  for (const auto& f : s.factors) names.push_back(f.name);
  return names;
}

TEST(TuneSpace, FactorsFollowTheRequestAndSayWhatIsNotSearched) {
  TuneSpaceRequest request;
  request.dtypes = {Dtype::kFp32, Dtype::kBf16, Dtype::kInt8};
  const TuneSpace plain = make_tune_space(stock_options(), request);
  EXPECT_EQ(factor_names(plain), (std::vector<std::string>{"threads", "dtype", "engine", "heap"}));
  EXPECT_EQ(plain.factors[0].values, (std::vector<std::string>{"4", "2", "1"}));
  EXPECT_EQ(plain.factors[1].values, (std::vector<std::string>{"fp32", "bf16", "int8"}));
  const auto said = [](const TuneSpace& s, const std::string& prefix) {
    for (const auto& line : s.not_searched)
      if (line.rfind(prefix, 0) == 0) return true;
    return false;
  };
  EXPECT_TRUE(said(plain, "memory_format:"));
  EXPECT_TRUE(said(plain, "batch:"));
  EXPECT_TRUE(said(plain, "inter-op threads:"));
  EXPECT_TRUE(said(plain, "graph-level options:"));

  request.has_convolutions = true;
  request.batches = {1, 2, 4, 8, 16, 32};
  const TuneSpace wide = make_tune_space(stock_options(), request);
  EXPECT_EQ(factor_names(wide), (std::vector<std::string>{"threads", "dtype", "memory_format",
                                                          "engine", "heap", "batch"}));
  EXPECT_EQ(wide.factors.back().values.front(), "8");  // stock's batch first
  EXPECT_EQ(wide.factors.back().values.size(), 6u);
  EXPECT_FALSE(said(wide, "memory_format:"));
}

TEST(TuneSpace, APointRunsWhatItNames) {
  TuneSpaceRequest request;
  request.dtypes = {Dtype::kBf16};
  request.has_convolutions = true;
  request.batches = {4, 16};
  const TuneSpace space = make_tune_space(stock_options(), request);
  EXPECT_EQ(options_at(space, analysis::TunePoint(space.factors.size(), 0)).dtype, Dtype::kFp32);
  // threads=1 (index 2), bf16, channels_last, native, return, batch 16 (index 2).
  const RunOptions o = options_at(space, {2, 1, 1, 1, 1, 2});
  EXPECT_EQ(o.threads, 1);
  EXPECT_EQ(o.dtype, Dtype::kBf16);
  EXPECT_EQ(o.memory_format, MemoryFormat::kChannelsLast);
  EXPECT_EQ(o.engine, Engine::kNative);
  EXPECT_EQ(o.heap, HeapPolicy::kReturn);
  EXPECT_EQ(o.config.get_int("batch"), 16);
  // The reproducer line of that point carries every setting that differs from the defaults.
  const auto& w = workloads::default_registry().get("autoenc");
  const std::string line = reproducer_command(w, o);
  for (const char* flag : {"--threads 1", "--dtype bf16", "--memory-format channels_last",
                           "--engine native", "--heap return", "--batch 16"})
    EXPECT_NE(line.find(flag), std::string::npos) << flag << " in " << line;
  const std::string stock_line = reproducer_command(w, stock_options());
  EXPECT_EQ(stock_line.find("--engine"), std::string::npos) << stock_line;
  EXPECT_EQ(stock_line.find("--heap"), std::string::npos) << stock_line;
}

TEST(TuneTrials, APastDeadlineMeasuresTheFirstTrialOnlyAndSaysWhyNotTheRest) {
  RunOptions stock = stock_options();
  stock.threads = 1;
  stock.config.set_from_text("hidden", "16");
  stock.config.set_from_text("latent", "4");
  TuneSpaceRequest request;
  request.dtypes = {Dtype::kBf16};
  const TuneSpace space = make_tune_space(stock, request);  // dtype, engine, heap: 8 points
  const auto points = analysis::all_points(space.factors);
  ASSERT_EQ(points.size(), 8u);
  const auto& w = workloads::default_registry().get("autoenc");
  TrialRunner without_deadline(w, space);
  const auto all = without_deadline(points, 3);
  for (const auto& o : all) {
    EXPECT_TRUE(o.outcome.ok()) << o.outcome.reason;
    EXPECT_GE(o.steps, 1u);  // a trial far behind the fastest stops after one step
    EXPECT_GT(o.throughput, 0);
  }
  TrialRunner late(w, space);
  late.set_deadline(std::chrono::steady_clock::now());
  const auto cut = late(points, 3);
  // stock: a call always measures one
  EXPECT_TRUE(cut.front().outcome.ok()) << cut.front().outcome.reason;
  for (size_t i = 1; i < cut.size(); ++i) {
    EXPECT_EQ(cut[i].outcome.state, OutcomeState::kTimeout);
    EXPECT_EQ(cut[i].outcome.reason, kNotReached);
  }
}

TEST(ExecutionSettings, ParseNamesAndRefuseUnknownValues) {
  EXPECT_EQ(parse_engine("native"), Engine::kNative);
  EXPECT_STREQ(engine_name(parse_engine("onednn")), "onednn");
  EXPECT_EQ(parse_heap_policy("return"), HeapPolicy::kReturn);
  EXPECT_STREQ(heap_policy_name(parse_heap_policy("keep")), "keep");
  EXPECT_THROW(parse_engine("mkl"), UsageError);
  EXPECT_THROW(parse_heap_policy("jemalloc"), UsageError);
}

TEST(ExecutionSettings, EngineChoiceSelectsThePathAndRestoresIt) {
  const bool before = at::globalContext().userEnabledMkldnn();
  {
    const EngineChoice native(Engine::kNative);
    EXPECT_FALSE(at::globalContext().userEnabledMkldnn());
    {
      const EngineChoice onednn(Engine::kOnednn);
      EXPECT_TRUE(at::globalContext().userEnabledMkldnn());
    }
    EXPECT_FALSE(at::globalContext().userEnabledMkldnn());
  }
  EXPECT_EQ(at::globalContext().userEnabledMkldnn(), before);
}

}  // namespace
}  // namespace plumb::run

// The stored document of a tuning session reads back into the typed result and writes out byte
// for byte: documents plumb tune stored (found; a latency bound nobody met; a stock precision
// over the budget) and the variants of a found one (failed contribution trials, unknown
// headroom, a precision without a roof, an unknown between-run spread, final runs that could
// not be compared).
namespace plumb::store {
namespace {

using json = nlohmann::ordered_json;

constexpr char kFoundDocument[] =
    R"json({"workload":"autoenc","mode":"infer","batch":8,"threads":2,"unit":"images/s","budget_s":8.0,"max_error":0.02,"latency_bound_s":null,"precision_errors":[{"dtype":"fp32","error":0.0,"measure":"relative_l2","allowed":true},{"dtype":"bf16","error":0.0018316667116112593,"measure":"relative_l2","allowed":true},{"dtype":"fp16","error":null,"measure":"relative_l2","allowed":false,"note":"unsupported in fp16: \"addmm_impl_cpu_\" not implemented for 'Half'"},{"dtype":"int8","error":0.0021743387537575035,"measure":"relative_l2","allowed":true}],"space":{"factors":[{"name":"threads","values":["2","1"]},{"name":"dtype","values":["fp32","bf16","int8"]},{"name":"engine","values":["onednn","native"]},{"name":"heap","values":["keep","return"]}],"points":24,"not_searched":["memory_format: the model has no 4-D weights, so channels_last changes nothing","batch: the batch is kept (give --latency-bound to search the batch within a bound)","inter-op threads: LibTorch's inter-op pool runs at::launch and TorchScript forks; plumb's C++ workloads run every operator on the calling thread, so the pool size changes nothing (it can also be set only once per process)","graph-level options: LibTorch 1.13 C++ offers torch::jit::freeze and optimize_for_inference (conv-bn folding, oneDNN conversion) for TorchScript modules only; plumb's workloads are C++ frontend modules, which C++ cannot script (plumb analyze fusion measures conv-bn folding per shape)"]},"search":{"method":"successive halving","eta":3,"first_steps":3,"rungs":[{"steps":3,"points":24,"seconds":0.6834979130000001},{"steps":9,"points":8,"seconds":0.9176577669999999},{"steps":27,"points":3,"seconds":0.873652373},{"steps":81,"points":1,"seconds":0.831583642}],"trials":36,"seconds":3.306391695,"stop_reason":"1 finalist(s) left","not_measured":0,"best":"threads=1 engine=native"},"contributions":[{"factor":"threads","stock":"2","best":"1","alone_from_stock":0.8931937501222634,"removed_from_best":0.8830799862973133,"reverted":false},{"factor":"engine","stock":"onednn","best":"native","alone_from_stock":0.9780844654987642,"removed_from_best":0.8064349782067067,"reverted":false}],"most":"engine","stock":{"setting":"stock","options":{"threads":2,"dtype":"fp32","memory_format":"contiguous","engine":"onednn","heap":"keep","batch":8},"command":"plumb run autoenc --mode infer --batch 8 --threads 2 --seed 0 --target-ci 0.5 --max-time 1 --min-samples 5 --max-warmup-time 2 --set hidden=16 --set latent=4","run_ids":[1,3],"throughput":332542.2721614947},"best":{"setting":"threads=1 engine=native","options":{"threads":1,"dtype":"fp32","memory_format":"contiguous","engine":"native","heap":"keep","batch":8},"command":"plumb run autoenc --mode infer --batch 8 --threads 1 --engine native --seed 0 --target-ci 0.5 --max-time 1 --min-samples 5 --max-warmup-time 2 --set hidden=16 --set latent=4","run_ids":[2,4],"throughput":329501.2821769092,"interval_of_one_run":{"low":308706.27354199643,"high":351697.0799152131}},"speedup":{"ratio":0.9908553280615444,"ci_low":0.9394937184040009,"ci_high":1.0450248489322627,"verdict":"no significant difference","reason":"interval [0.939, 1.045] includes 1: the difference is within the noise; runs of this setting vary by 1.2% (SD, 2 dof)","between_run_sd":0.012370834571066034},"headroom":{"flops_per_unit":53000.0,"probe_id":1,"stock":{"dtype":"fp32","achieved_flops":17624740424.55922,"roof_flops":227114192391.85867,"roof_source":"fp32 instruction peak (avx512 vfmadd231ps, 2 threads)","roof_fraction":0.07760299010354146},"best":{"dtype":"fp32","achieved_flops":17463567955.376186,"roof_flops":269685836866.58307,"roof_source":"fp32 instruction peak (avx512 vfmadd231ps, 1 threads)","roof_fraction":0.06475522837343375}},"found":true})json";
constexpr char kBoundDocument[] =
    R"json({"workload":"autoenc","mode":"infer","batch":8,"threads":2,"unit":"images/s","budget_s":8.0,"max_error":0.02,"latency_bound_s":1e-06,"precision_errors":[{"dtype":"fp32","error":0.0,"measure":"relative_l2","allowed":true}],"space":{"factors":[{"name":"threads","values":["2","1"]},{"name":"engine","values":["onednn","native"]},{"name":"heap","values":["keep","return"]},{"name":"batch","values":["8","1","2","4","16","32"]}],"points":48,"not_searched":["dtype: no other precision is allowed (--dtypes, or the error budget)","memory_format: the model has no 4-D weights, so channels_last changes nothing","inter-op threads: LibTorch's inter-op pool runs at::launch and TorchScript forks; plumb's C++ workloads run every operator on the calling thread, so the pool size changes nothing (it can also be set only once per process)","graph-level options: LibTorch 1.13 C++ offers torch::jit::freeze and optimize_for_inference (conv-bn folding, oneDNN conversion) for TorchScript modules only; plumb's workloads are C++ frontend modules, which C++ cannot script (plumb analyze fusion measures conv-bn folding per shape)"]},"search":{"method":"successive halving","eta":3,"first_steps":3,"rungs":[{"steps":3,"points":48,"seconds":1.7223198770000003}],"trials":48,"seconds":1.7223198770000003,"stop_reason":"no configuration ran within the bounds","not_measured":0},"closest":{"setting":"threads=1 batch=2","step_s":2.0313945159106257e-05,"command":"plumb run autoenc --mode infer --batch 2 --threads 1 --seed 0 --target-ci 0.5 --max-time 1 --min-samples 5 --max-warmup-time 2 --set hidden=16 --set latent=4"},"found":false,"message":"no configuration meets --latency-bound 0.001 ms; the closest is threads=1 batch=2 at a mean step of 0.02 ms"})json";
constexpr char kPrecisionDocument[] =
    R"json({"workload":"autoenc","mode":"infer","batch":8,"threads":2,"unit":"images/s","budget_s":8.0,"max_error":0.0,"latency_bound_s":null,"precision_errors":[{"dtype":"bf16","error":0.0018316667116112593,"measure":"relative_l2","allowed":false,"note":"relative_l2 1.83e-03 exceeds --max-error 0"}],"search":{"trials":0,"seconds":0,"stop_reason":"not started"},"space":{"points":0},"found":false,"message":"no precision meets --max-error 0: the stock's bf16 is over it; the closest is bf16 (relative_l2 1.83e-03); raise --max-error or allow fp32 (--dtypes)"})json";

// `object` with `key` set to `value` right after `after` (ordered_json keeps insertion order).
json with_key_after(const json& object, const std::string& after, const std::string& key,
                    const json& value) {
  json out = json::object();
  for (const auto& [k, v] : object.items()) {
    if (k == key) continue;
    out[k] = v;
    if (k == after) out[key] = value;
  }
  return out;
}

void expect_round_trip(const json& document) {
  EXPECT_EQ(json_text(json(document.get<TuneResult>())), json_text(document));
}

TEST(TuneResult, StoredDocumentsReadBackByteForByte) {
  for (const char* text : {kFoundDocument, kBoundDocument, kPrecisionDocument}) {
    SCOPED_TRACE(text);
    EXPECT_EQ(json_text(json(json::parse(text).get<TuneResult>())), text);
  }
  const json found = json::parse(kFoundDocument);
  json failed = found;
  json& row = failed["contributions"][0];
  row["alone_from_stock"] = nullptr;
  row = with_key_after(row, "alone_from_stock", "alone_note", "out of memory");
  row["removed_from_best"] = nullptr;
  row = with_key_after(row, "removed_from_best", "removed_note", "error: no kernel");
  failed["most"] = nullptr;
  expect_round_trip(failed);
  json unknown = found;
  unknown["headroom"] = {{"note", "the cost model counted no FLOPs in the step"}};
  unknown["best"]["interval_of_one_run"] = {
      {"low", nullptr},
      {"high", nullptr},
      {"note", "between-run spread unknown: measure with --replicates 2 or more"}};
  expect_round_trip(unknown);
  json roofless = found;
  roofless["headroom"]["best"] = {{"dtype", "fp16"},
                                  {"achieved_flops", 1e9},
                                  {"roof_flops", nullptr},
                                  {"roof_note", "the probe has no fp16 peak"}};
  expect_round_trip(roofless);
  json apart = found;
  apart.erase("headroom");
  apart["found"] = false;
  apart["message"] = "the final runs could not be compared: no ok run";
  expect_round_trip(apart);
  const TuneResult r = found.get<TuneResult>();
  EXPECT_TRUE(r.found);
  EXPECT_EQ(r.best_setting(), "threads=1 engine=native");
  EXPECT_EQ(r.final_runs->contributions.size(), 2u);
  EXPECT_EQ(r.headroom->probe_id, 1);
  EXPECT_EQ(json::parse(kBoundDocument).get<TuneResult>().best_setting(), "");
}

// A document from an older plumb with keys missing reads as defaults rather than failing.
TEST(TuneResult, MissingKeysReadAsDefaults) {
  const auto r = json::parse(R"({"unit": "images/s", "best": {"setting": "dtype=bf16"},
      "stock": {"throughput": 3.5}, "most": "dtype"})")
                     .get<TuneResult>();
  EXPECT_EQ(r.unit, "images/s");
  EXPECT_EQ(r.best_setting(), "dtype=bf16");
  EXPECT_DOUBLE_EQ(r.final_runs->stock.throughput, 3.5);
  EXPECT_TRUE(std::isnan(r.final_runs->best.throughput));
  EXPECT_FALSE(r.found);
  EXPECT_FALSE(r.headroom.has_value());
}

}  // namespace
}  // namespace plumb::store
