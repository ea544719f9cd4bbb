// The report's view of token-level serving (report_token_serve.cpp): a store holding two searched
// token sessions (static and continuous batching), one at a fixed rate with chunked prefill and
// bursty arrivals, and a one-shot session; the TTFT, TPOT and goodput charts hold each Server
// measurement of the token sessions (and nothing of the one-shot one), the engine timeline holds
// the found trial's iterations (downsampled, peaks kept), the loader reads only those iterations,
// the table's rows are worked by hand, and headless Chromium draws every chart.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "plumb/core/atomic_file.h"
#include "plumb/report/page.h"
#include "plumb/report/report.h"
#include "plumb/run/serving_loop.h"
#include "plumb/store/results_store.h"
#include "plumb/store/serve_records.h"
#include "scratch_dir.h"

namespace plumb {
namespace {

using json = nlohmann::ordered_json;
namespace fs = std::filesystem;

constexpr int64_t kBudget = 1 << 20;   // every token session's KV budget: 1 MiB
constexpr int kLongIterations = 5000;  // the continuous session's found trial

// A Server measurement (role "trial" or "server") or Offline (offered NaN), its tails and
// intervals derived from `ttft_s` and `tpot_s` so each test can work them back.
store::StoredServeMeasurement token_measurement(const std::string& role, double offered,
                                                double ttft_s, double tpot_s, double goodput,
                                                const std::string& verdict) {
  store::StoredServeMeasurement m;
  m.role = role;
  m.offered_qps = offered;
  m.achieved_qps = std::isfinite(offered) ? 0.95 * offered : 10;
  m.queries = 1000;
  m.good = std::isfinite(goodput) ? static_cast<int64_t>(std::lround(goodput * 100)) : 0;
  m.over_bound = m.queries - m.good;
  m.verdict = verdict;
  m.output_tokens = 40000;
  m.output_token_rate = 100 * m.achieved_qps;
  m.goodput_rate = goodput;
  m.ttft_tail_s = ttft_s;
  m.ttft_low_s = 0.8 * ttft_s;
  m.ttft_high_s = 1.25 * ttft_s;
  m.ttft_verdict = verdict;
  m.tpot_tail_s = tpot_s;
  m.tpot_low_s = 0.9 * tpot_s;
  m.tpot_high_s = 1.1 * tpot_s;
  m.tpot_verdict = verdict;
  m.mean_batch = 3.5;
  m.largest_batch = 8;
  m.peak_kv_reserved_bytes = kBudget / 2;
  m.peak_kv_used_bytes = kBudget / 4;
  return m;
}

store::StoredServeSession token_session(const std::string& scheduler, const std::string& setting) {
  store::StoredServeSession s;
  s.kind = "token";
  s.started_at = "2026-01-01T00:00:00Z";
  s.workload = "gpt2";
  s.scenario = "server";
  s.dtype = "fp32";
  s.setting = setting;
  s.command = "plumb serve gpt2 (fixture)";
  s.scheduler = scheduler;
  s.bound_s = 2.0;
  s.tpot_bound_s = 0.2;
  s.percentile = 0.99;
  s.max_batch = 8;
  s.kv_budget_bytes = kBudget;
  s.burstiness = 1;
  return s;
}

// Three iterations: two back to back, an idle gap, one more; KV in quarters of the budget.
run::TokenServeTrace short_trace() {
  run::TokenServeTrace t;
  t.requests.resize(2);
  t.requests[0] = {0.0, 0.0, 0.1, 0.6, 16, 3, {}};
  t.requests[1] = {0.05, 0.5, 0.6, 0.6, 16, 1, {}};
  t.iterations.push_back({0.0, 0.1, 4, 64, 4, 0, kBudget / 2, kBudget / 4});
  t.iterations.push_back({0.1, 0.2, 4, 0, 4, 1, kBudget / 2, kBudget * 3 / 8});
  t.iterations.push_back({0.5, 0.6, 2, 16, 2, 0, kBudget / 4, kBudget / 8});
  return t;
}

// Back-to-back iterations of 10 ms with a batch of 6, except one of 8 (the peak) in the middle.
run::TokenServeTrace long_trace() {
  run::TokenServeTrace t;
  t.requests.push_back({0.0, 0.0, 0.01, 50.0, 16, 5000, {}});
  for (int i = 0; i < kLongIterations; ++i) {
    const bool peak = i == kLongIterations / 2 + 3;  // 25.03 s: inside one 75 ms bucket
    t.iterations.push_back({0.01 * i, 0.01 * (i + 1), peak ? 8 : 6, 0, 6, 0,
                            peak ? kBudget : kBudget / 2, kBudget / 4});
  }
  return t;
}

// The measurements of a session not drawn in the timeline keep a trace with iterations too, so
// the loader test sees it leave them alone.
run::TokenServeTrace other_trace() {
  run::TokenServeTrace t;
  t.requests.push_back({0.0, 0.0, 0.1, 0.2, 16, 2, {}});
  t.iterations.push_back({0.0, 0.1, 1, 16, 1, 0, kBudget / 8, kBudget / 16});
  return t;
}

struct Fixture {
  std::string db;
  int64_t static_found = 0, continuous_found = 0, fixed_server = 0;
};

Fixture write_fixture(const fs::path& dir) {
  Fixture f;
  f.db = (dir / "tokens.db").string();
  auto store = store::ResultsStore::open(f.db);
  // Static: offline ceiling 10 req/s, trials at 2 (met), 8 (missed), 4 (met): found 4.
  auto st = token_session("static", "gpt2 static");
  st.searched = true;
  st.found_qps = 4;
  st.failed_qps = 8;
  st.measurements = {token_measurement("offline", NAN, 5.0, 0.05, NAN, "undecided"),
                     token_measurement("trial", 2, 0.8, 0.04, 1.9, "met"),
                     token_measurement("trial", 8, 6.0, 0.05, 1.5, "missed"),
                     token_measurement("trial", 4, 1.5, 0.045, 3.9, "met")};
  store->save_token_serve_session(st, {other_trace(), other_trace(), other_trace(), short_trace()});
  f.static_found = st.measurements[3].id;
  // Continuous: offline 12 req/s, trials at 2, 8 (missed), 6: found 6.
  auto ct = token_session("continuous", "gpt2 continuous");
  ct.searched = true;
  ct.found_qps = 6;
  ct.failed_qps = 8;
  ct.measurements = {token_measurement("offline", NAN, 4.0, 0.06, NAN, "undecided"),
                     token_measurement("trial", 2, 0.1, 0.03, 2.0, "met"),
                     token_measurement("trial", 8, 3.0, 0.25, 4.0, "missed"),
                     token_measurement("trial", 6, 0.3, 0.08, 5.9, "met")};
  ct.measurements[0].achieved_qps = 12;
  store->save_token_serve_session(ct, {other_trace(), other_trace(), other_trace(), long_trace()});
  f.continuous_found = ct.measurements[3].id;
  // Continuous with chunks of 64 and bursty arrivals at a given rate of 3 req/s.
  auto fx = token_session("continuous", "gpt2 continuous chunk 64 burst 0.5 qps 3");
  fx.chunk_tokens = 64;
  fx.burstiness = 0.5;
  fx.measurements = {token_measurement("server", 3, 0.5, 0.07, 2.8, "met")};
  store->save_token_serve_session(fx, {short_trace()});
  f.fixed_server = fx.measurements[0].id;
  // A one-shot session: dlrm's Server search, one trial.
  store::StoredServeSession q;
  q.started_at = "2026-01-01T00:00:00Z";
  q.workload = "dlrm";
  q.scenario = "server";
  q.dtype = "fp32";
  q.setting = "dlrm server";
  q.bound_s = 0.01;
  q.searched = true;
  q.found_qps = 100;
  q.failed_qps = 200;
  store::StoredServeMeasurement trial;
  trial.role = "trial";
  trial.offered_qps = 100;
  trial.achieved_qps = 99;
  trial.queries = 1000;
  trial.tail_s = 0.008;
  trial.tail_low_s = 0.007;
  trial.tail_high_s = 0.009;
  trial.verdict = "met";
  trial.mean_batch = 2;
  q.measurements = {trial};
  store->save_serve_session(q, {{run::QueryTimes{0.0, 0.001, 0.005, 1, 0}}});
  return f;
}

report::Page build(const Fixture& f) {
  report::ReportRequest request;
  request.db = f.db;
  request.generated_at = "2026-01-01 00:00 UTC";
  return report::build_report(request);
}

const report::Section& serve_section_of(const report::Page& page) {
  for (const auto& s : page.sections)
    if (s.id == "serve") return s;
  throw std::runtime_error("no serving section");
}

const report::Chart* chart_titled(const report::Section& s, const std::string& title) {
  for (const auto& b : s.blocks)
    if (const auto* c = std::get_if<report::Chart>(&b); c != nullptr && c->title == title) return c;
  return nullptr;
}

const report::Table* table_titled(const report::Section& s, const std::string& title) {
  for (const auto& b : s.blocks)
    if (const auto* t = std::get_if<report::Table>(&b); t != nullptr && t->title == title) return t;
  return nullptr;
}

// A layered chart's data: layer i's inline values.
const json& layer_values(const report::Chart& c, size_t i) {
  return c.spec.at("layer").at(i).at("data").at("values");
}

// series -> offered -> the row, from a layer's values.
std::map<std::string, std::map<double, json>> by_series(const json& values) {
  std::map<std::string, std::map<double, json>> out;
  for (const auto& v : values)
    out[v.at("series").get<std::string>()][v.at("offered").get<double>()] = v;
  return out;
}

const std::string kStatic = "gpt2 fp32, static";
const std::string kContinuous = "gpt2 fp32, continuous";
const std::string kChunked = "gpt2 fp32, continuous (chunks of 64), burstiness 0.5";

class ReportTokenServe : public testing::ScratchDirTest {};

TEST_F(ReportTokenServe, TokenSessionsHaveTheirOwnChartsAndOneShotOnesKeepTheOld) {
  const auto f = write_fixture(dir_);
  const auto page = build(f);
  const auto& s = serve_section_of(page);
  std::vector<std::string> titles;
  for (const auto& b : s.blocks)
    if (const auto* c = std::get_if<report::Chart>(&b)) titles.push_back(c->title);
  EXPECT_EQ(titles, (std::vector<std::string>{"Tail latency over served throughput",
                                              "Time to first token over offered request rate",
                                              "Time per output token over offered request rate",
                                              "Goodput over offered request rate",
                                              "Engine timeline: decode batch and KV cache"}));
  // The one-shot chart: dlrm's trial only, none of the token sessions' requests/s.
  const auto* old = chart_titled(s, "Tail latency over served throughput");
  ASSERT_NE(old, nullptr);
  const json& curve = layer_values(*old, 2);
  ASSERT_EQ(curve.size(), 1u);
  EXPECT_EQ(curve[0]["series"], "dlrm fp32, p99 <= 10 ms");
  EXPECT_DOUBLE_EQ(curve[0]["tail_ms"].get<double>(), 8.0);
  const auto* old_table = table_titled(s, "Every one-shot session");
  ASSERT_NE(old_table, nullptr);
  ASSERT_EQ(old_table->rows.size(), 1u);
  EXPECT_EQ(old_table->rows[0][0].text, "dlrm");
  // No dlrm in the token charts or table.
  for (const char* title :
       {"Time to first token over offered request rate",
        "Time per output token over offered request rate", "Goodput over offered request rate",
        "Engine timeline: decode batch and KV cache"}) {
    const auto* c = chart_titled(s, title);
    ASSERT_NE(c, nullptr) << title;
    EXPECT_EQ(c->spec.dump().find("dlrm"), std::string::npos) << title;
  }
  const auto* tokens = table_titled(s, "Every token-level session");
  ASSERT_NE(tokens, nullptr);
  for (const auto& row : tokens->rows) EXPECT_EQ(row[0].text, "gpt2");

  // Without token sessions the token part is absent; without one-shot ones the old one is.
  auto data = report::load_report_data(*store::ResultsStore::open(f.db, true));
  auto only = [&](const std::string& kind) {
    report::ReportData d = data;
    d.serve.erase(std::remove_if(d.serve.begin(), d.serve.end(),
                                 [&](const auto& x) { return x.kind != kind; }),
                  d.serve.end());
    return *report::serve_section(d);
  };
  const auto q = only("query");
  EXPECT_NE(chart_titled(q, "Tail latency over served throughput"), nullptr);
  EXPECT_EQ(chart_titled(q, "Goodput over offered request rate"), nullptr);
  EXPECT_EQ(table_titled(q, "Every token-level session"), nullptr);
  const auto t = only("token");
  EXPECT_EQ(chart_titled(t, "Tail latency over served throughput"), nullptr);
  EXPECT_EQ(table_titled(t, "Every one-shot session"), nullptr);
  EXPECT_NE(chart_titled(t, "Goodput over offered request rate"), nullptr);
  EXPECT_NE(table_titled(t, "Every token-level session"), nullptr);
}

TEST_F(ReportTokenServe, TtftAndTpotChartsHoldEachServerMeasurementWithItsIntervalAndBound) {
  const auto page = build(write_fixture(dir_));
  const auto& s = serve_section_of(page);
  struct Expect {
    const char* title;
    double bound_ms;
    double low, high;  // the fixture's interval as a factor of the tail
    std::map<std::string, std::map<double, double>> tail_ms;
  };
  const std::vector<Expect> expected = {{"Time to first token over offered request rate",
                                         2000,
                                         0.8,
                                         1.25,
                                         {{kStatic, {{2, 800}, {4, 1500}, {8, 6000}}},
                                          {kContinuous, {{2, 100}, {6, 300}, {8, 3000}}},
                                          {kChunked, {{3, 500}}}}},
                                        {"Time per output token over offered request rate",
                                         200,
                                         0.9,
                                         1.1,
                                         {{kStatic, {{2, 40}, {4, 45}, {8, 50}}},
                                          {kContinuous, {{2, 30}, {6, 80}, {8, 250}}},
                                          {kChunked, {{3, 70}}}}}};
  for (const auto& e : expected) {
    SCOPED_TRACE(e.title);
    const auto* c = chart_titled(s, e.title);
    ASSERT_NE(c, nullptr);
    // Offline runs (no offered rate) are not points; every trial and the fixed-rate run are.
    const auto points = by_series(layer_values(*c, 2));
    ASSERT_EQ(points.size(), e.tail_ms.size());
    for (const auto& [series, tails] : e.tail_ms) {
      ASSERT_EQ(points.count(series), 1u) << series;
      ASSERT_EQ(points.at(series).size(), tails.size()) << series;
      for (const auto& [offered, tail] : tails) {
        const json& p = points.at(series).at(offered);
        EXPECT_NEAR(p["tail_ms"].get<double>(), tail, 1e-9 * tail) << series << " " << offered;
        EXPECT_NEAR(p["low_ms"].get<double>(), e.low * tail, 1e-9 * tail);
        EXPECT_NEAR(p["high_ms"].get<double>(), e.high * tail, 1e-9 * tail);
      }
    }
    // The error bars: the same intervals, one per point.
    const auto bars = by_series(layer_values(*c, 1));
    const json& bar = bars.at(kContinuous).at(6);
    EXPECT_NEAR(bar["low_ms"].get<double>(), e.low * e.tail_ms.at(kContinuous).at(6), 1e-6);
    EXPECT_NEAR(bar["high_ms"].get<double>(), e.high * e.tail_ms.at(kContinuous).at(6), 1e-6);
    // One dashed rule per series at its bound.
    const json& bounds = layer_values(*c, 0);
    ASSERT_EQ(bounds.size(), 3u);
    for (const auto& b : bounds) EXPECT_DOUBLE_EQ(b["bound_ms"].get<double>(), e.bound_ms);
    EXPECT_EQ(c->spec["layer"][0]["mark"]["strokeDash"], json::array({4, 4}));
  }
  // The missed trial says so in its tooltip field.
  const auto* ttft = chart_titled(s, "Time to first token over offered request rate");
  EXPECT_EQ(by_series(layer_values(*ttft, 2)).at(kStatic).at(8)["verdict"], "missed");
}

TEST_F(ReportTokenServe, GoodputChartHasEachTrialsGoodputTheDiagonalAndTheCeilings) {
  const auto page = build(write_fixture(dir_));
  const auto* c = chart_titled(serve_section_of(page), "Goodput over offered request rate");
  ASSERT_NE(c, nullptr);
  const auto points = by_series(layer_values(*c, 2));
  const std::map<std::string, std::map<double, double>> goodput = {
      {kStatic, {{2, 1.9}, {4, 3.9}, {8, 1.5}}},
      {kContinuous, {{2, 2.0}, {6, 5.9}, {8, 4.0}}},
      {kChunked, {{3, 2.8}}}};
  ASSERT_EQ(points.size(), goodput.size());
  for (const auto& [series, rates] : goodput) {
    ASSERT_EQ(points.at(series).size(), rates.size()) << series;
    for (const auto& [offered, g] : rates)
      EXPECT_DOUBLE_EQ(points.at(series).at(offered)["goodput"].get<double>(), g);
  }
  EXPECT_EQ(points.at(kContinuous).at(6)["good"], 590);
  // y = x from 0 to the largest offered rate.
  const json& diagonal = layer_values(*c, 0);
  ASSERT_EQ(diagonal.size(), 2u);
  EXPECT_EQ(diagonal[0]["offered"], 0);
  EXPECT_EQ(diagonal[0]["goodput"], 0);
  EXPECT_DOUBLE_EQ(diagonal[1]["offered"].get<double>(), 8);
  EXPECT_DOUBLE_EQ(diagonal[1]["goodput"].get<double>(), 8);
  // The Offline ceilings of the two searched sessions (the fixed-rate one has no Offline run).
  std::map<std::string, double> ceilings;
  for (const auto& v : layer_values(*c, 1))
    ceilings[v["series"].get<std::string>()] = v["ceiling"].get<double>();
  EXPECT_EQ(ceilings, (std::map<std::string, double>{{kStatic, 10}, {kContinuous, 12}}));
}

TEST_F(ReportTokenServe, TimelineHoldsTheFoundTrialsIterationsDownsampledWithPeaksKept) {
  const auto f = write_fixture(dir_);
  // The loader reads the iterations of the three measurements drawn, and no others.
  const auto data = report::load_report_data(*store::ResultsStore::open(f.db, true));
  std::set<int64_t> loaded;
  for (const auto& [id, iterations] : data.serve_iterations) loaded.insert(id);
  EXPECT_EQ(loaded, (std::set<int64_t>{f.static_found, f.continuous_found, f.fixed_server}));
  EXPECT_EQ(data.serve_iterations.at(f.continuous_found).size(), size_t{kLongIterations});

  const auto page = build(f);
  const auto* c =
      chart_titled(serve_section_of(page), "Engine timeline: decode batch and KV cache");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->spec["facet"]["field"], "series");
  std::map<std::string, std::vector<json>> series;
  for (const auto& v : c->spec["data"]["values"])
    series[v["series"].get<std::string>()].push_back(v);
  ASSERT_EQ(series.size(), 3u);
  EXPECT_LE(c->spec["data"]["values"].size(), 2000u);

  // Static's found trial (4 req/s): every iteration at its start, and the idle engine after the
  // second (a gap) and after the last; KV as a share of the 1 MiB budget.
  const auto& st = series.at(kStatic + ": trial at 4 req/s");
  const std::vector<std::vector<double>> want = {{0.0, 4, 0.5, 0.25},
                                                 {0.1, 4, 0.5, 0.375},
                                                 {0.2, 0, 0, 0},
                                                 {0.5, 2, 0.25, 0.125},
                                                 {0.6, 0, 0, 0}};
  ASSERT_EQ(st.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(st[i]["t_s"].get<double>(), want[i][0], 1e-9) << i;
    EXPECT_EQ(st[i]["batch"].get<double>(), want[i][1]) << i;
    EXPECT_NEAR(st[i]["reserved"].get<double>(), want[i][2], 1e-9) << i;
    EXPECT_NEAR(st[i]["used"].get<double>(), want[i][3], 1e-9) << i;
  }
  // The fixed-rate session: its one Server run.
  EXPECT_EQ(series.at(kChunked + ": server at 3 req/s").size(), want.size());

  // Continuous's found trial: 5000 iterations (and the idle end) in a third of the 2000 points,
  // equal time buckets over 0 .. 50 s; the one iteration of batch 8 and a full reservation
  // survives as a bucket's maximum.
  const auto& ct = series.at(kContinuous + ": trial at 6 req/s");
  EXPECT_EQ(ct.size(), 2000u / 3);
  double peak_batch = 0, peak_reserved = 0, previous = -1;
  int peaks = 0;
  for (const auto& v : ct) {
    EXPECT_GT(v["t_s"].get<double>(), previous);
    previous = v["t_s"].get<double>();
    peak_batch = std::max(peak_batch, v["batch"].get<double>());
    peak_reserved = std::max(peak_reserved, v["reserved"].get<double>());
    peaks += v["batch"].get<double>() == 8 ? 1 : 0;
    EXPECT_NEAR(v["used"].get<double>(), 0.25, 1e-9);
  }
  EXPECT_EQ(peak_batch, 8);
  EXPECT_DOUBLE_EQ(peak_reserved, 1.0);
  EXPECT_EQ(peaks, 1);  // 75 ms buckets: the 10 ms peak lands in one
  EXPECT_NEAR(ct.front()["t_s"].get<double>(), 0, 1e-9);
  EXPECT_NEAR(ct.back()["t_s"].get<double>(), 50.0 * (2000 / 3 - 1) / (2000 / 3), 1e-3);
}

TEST_F(ReportTokenServe, TableRowsGiveEachSessionsFoundRateAndFiguresThere) {
  const auto page = build(write_fixture(dir_));
  const auto* t = table_titled(serve_section_of(page), "Every token-level session");
  ASSERT_NE(t, nullptr);
  ASSERT_EQ(t->columns.size(), 14u);
  ASSERT_EQ(t->rows.size(), 3u);
  auto texts = [](const std::vector<report::Cell>& row) {
    std::vector<std::string> out;
    for (const auto& c : row) out.push_back(c.text);
    return out;
  };
  const std::string bounds = "p99 TTFT <= 2000 ms, TPOT <= 200 ms";
  const std::string kv = "512.0 KiB reserved (50% of 1.0 MiB), 256.0 KiB written";
  EXPECT_EQ(texts(t->rows[0]),
            (std::vector<std::string>{
                "gpt2", "fp32", "static", "-", "1", bounds, "4 req/s (missed at 8)",
                "1500.00 ms [1200.00 ms, 1875.00 ms]", "45.00 ms [40.50 ms, 49.50 ms]",
                "3.9 req/s (390 of 1000 good)", "380", "3.50", kv, "ok"}));
  EXPECT_EQ(texts(t->rows[1]),
            (std::vector<std::string>{"gpt2", "fp32", "continuous", "-", "1", bounds,
                                      "6 req/s (missed at 8)", "300.00 ms [240.00 ms, 375.00 ms]",
                                      "80.00 ms [72.00 ms, 88.00 ms]",
                                      "5.9 req/s (590 of 1000 good)", "570", "3.50", kv, "ok"}));
  EXPECT_EQ(texts(t->rows[2]),
            (std::vector<std::string>{"gpt2", "fp32", "continuous", "64", "0.5", bounds,
                                      "3 req/s offered, met", "500.00 ms [400.00 ms, 625.00 ms]",
                                      "70.00 ms [63.00 ms, 77.00 ms]",
                                      "2.8 req/s (280 of 1000 good)", "285", "3.50", kv, "ok"}));
  // Sort keys: the found rate and the TTFT in ms.
  ASSERT_TRUE(t->rows[1][6].sort.has_value());
  EXPECT_DOUBLE_EQ(*t->rows[1][6].sort, 6.0);
  ASSERT_TRUE(t->rows[0][7].sort.has_value());
  EXPECT_DOUBLE_EQ(*t->rows[0][7].sort, 1500.0);
}

// Chromium draws each chart of the serving section (with the faceted two-axis timeline) with
// data marks and no JavaScript error, offline.
TEST_F(ReportTokenServe, ChromiumDrawsEveryServingChart) {
  ASSERT_EQ(std::system("command -v chromium >/dev/null"), 0)
      << "chromium is not installed: scripts/setup.sh installs it (apt-get install chromium)";
  const auto page = build(write_fixture(dir_));
  const fs::path html = dir_ / "report.html";
  write_file_atomically(html.string(), report::render_html(page));
  const fs::path dom = dir_ / "dom.html";
  const std::string dump =
      "timeout 180 chromium --headless --no-sandbox --disable-gpu --no-first-run "
      "--user-data-dir=" +
      (dir_ / "chromium").string() +
      " --proxy-server=127.0.0.1:9 --host-resolver-rules='MAP * ~NOTFOUND' "
      "--virtual-time-budget=30000 --dump-dom file://" +
      html.string() + " >" + dom.string() + " 2>/dev/null";
  ASSERT_EQ(std::system(dump.c_str()), 0);
  std::ifstream in(dom);
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string d = buffer.str();
  EXPECT_NE(d.find("data-charts-done=\"1\""), std::string::npos) << "charts never finished";
  const size_t errors = d.find("data-errors");
  ASSERT_NE(errors, std::string::npos);
  EXPECT_NE(d.find("data-errors=\"[]\""), std::string::npos) << d.substr(errors, 600);
  const std::regex container("<div class=\"chart[^\"]*\" id=\"(chart-[0-9]+)\"([^>]*)>");
  size_t drawn = 0;
  for (auto it = std::sregex_iterator(d.begin(), d.end(), container); it != std::sregex_iterator();
       ++it) {
    const std::string attributes = (*it)[2];
    std::smatch marks;
    ASSERT_TRUE(std::regex_search(attributes, marks, std::regex("data-marks=\"([0-9]+)\"")))
        << (*it)[1] << " was not drawn: " << attributes;
    EXPECT_GT(std::stoi(marks[1]), 0) << (*it)[1];
    EXPECT_NE(attributes.find("data-rendered=\"1\""), std::string::npos) << (*it)[1];
    ++drawn;
  }
  EXPECT_EQ(drawn, 5u);
}

}  // namespace
}  // namespace plumb
