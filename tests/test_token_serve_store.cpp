// The store's token-level serve sessions (schema v16): a session, its measurements' token
// columns, every request and engine iteration saved in one transaction and read back field by
// field (NaN through NULL); a v15 file upgraded in place keeping its one-shot sessions; a failed
// save leaving nothing; one-shot sessions and their JSON unchanged; the session's JSON; and plumb
// compare's rows for token sessions.
#include <cmath>
#include <filesystem>
#include <limits>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <SQLiteCpp/SQLiteCpp.h>
#include <gtest/gtest.h>

#include "historical_store.h"
#include "plumb/analysis/serve_comparison.h"
#include "plumb/store/record_json.h"
#include "plumb/store/results_store.h"
#include "plumb/store/serve_records.h"
#include "scratch_dir.h"

// A named namespace: the test sources are compiled as unity batches, where the anonymous
// namespaces of test_store.cpp and this file would be one.
namespace plumb::store::token_serve_test {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

class TokenServeStore : public testing::ScratchDirTest {
 protected:
  std::string file(const std::string& name) const { return (dir_ / name).string(); }
};

platform::Environment environment() {
  platform::Environment e;
  e.host = "bench-01";
  e.os = "Linux 6.1.0 x86_64";
  e.cpu_model = "test CPU";
  e.logical_cores = 8;
  e.threads_used = 2;
  e.device = "cpu";
  return e;
}

// A measurement with every token column set to a distinct value; NaN where `undefined`.
StoredServeMeasurement token_measurement(const std::string& role, double offered, double scale,
                                         bool undefined = false) {
  StoredServeMeasurement m;
  m.role = role;
  m.offered_qps = offered;
  m.achieved_qps = 3.25 * scale;
  m.queries = 40;
  m.over_bound = 3;
  m.largest_batch = 8;
  m.tail_s = m.tail_low_s = m.tail_high_s = kNaN;  // a token session's e2e has no tail
  m.p50_s = 0.5 * scale;
  m.p90_s = kNaN;
  m.p99_s = 0.875 * scale;
  m.p999_s = kNaN;
  m.verdict = "met";
  m.queueing_share = kNaN;
  m.mean_batch = 5.5;
  m.output_tokens = 1234;
  m.good = 37;
  m.output_token_rate = 101.5 * scale;
  m.goodput_rate = 3.0 * scale;
  m.ttft_tail_s = 0.125 * scale;
  m.ttft_low_s = 0.0625 * scale;
  m.ttft_high_s = undefined ? kNaN : 0.25 * scale;
  m.ttft_p50_s = 0.03125;
  m.ttft_p90_s = 0.09375;
  m.ttft_p99_s = 0.125;
  m.ttft_over = 1;
  m.ttft_verdict = "met";
  m.tpot_tail_s = 0.015625 * scale;
  m.tpot_low_s = 0.0078125 * scale;
  m.tpot_high_s = 0.03125 * scale;
  m.tpot_p50_s = 0.01;
  m.tpot_p90_s = 0.012;
  m.tpot_p99_s = undefined ? kNaN : 0.014;
  m.tpot_over = 2;
  m.tpot_verdict = undefined ? "undecided" : "met";
  m.itl_p50_s = 0.011;
  m.itl_p99_s = undefined ? kNaN : 0.021;
  m.queueing_mean_s = 0.0042;
  m.peak_kv_reserved_bytes = int64_t{3} << 33;  // beyond 32 bits
  m.peak_kv_used_bytes = 123456789;
  return m;
}

StoredServeSession token_session(const std::string& scenario = "server", bool searched = true) {
  StoredServeSession s;
  s.kind = "token";
  s.started_at = "2026-03-01T10:00:00Z";
  s.workload = "gpt2";
  s.scenario = scenario;
  s.dtype = "fp32";
  s.setting = "plumb serve gpt2 --scheduler continuous --scenario " + scenario;
  s.tag = "t";
  s.command = "plumb serve gpt2 --scheduler continuous";
  s.threads = 2;
  s.bound_s = 2.0;
  s.tpot_bound_s = 0.2;
  s.percentile = 0.99;
  s.max_batch = 8;
  s.max_wait_s = 0;
  s.scheduler = "continuous";
  s.chunk_tokens = 256;
  s.kv_budget_bytes = int64_t{5} << 32;
  s.burstiness = 0.5;
  s.searched = searched;
  s.found_qps = searched ? 2.5 : kNaN;
  s.failed_qps = searched ? 3.25 : kNaN;
  s.environment = environment();
  s.document = {{"lengths", {{"describe", "prompt 16-64, output 8-32"}}},
                {"kv_bytes_per_position", 36864},
                {"slot_positions", 96},
                {"lone_ttft_ms", 12.5},
                {"lone_tpot_ms", 4.25},
                {"full_batch_tpot_ms", 9.5},
                {"bound_notes", nlohmann::json::array()},
                {"defaults", {{"ttft_ms", 2000}, {"tpot_ms", 200}}},
                {"config", nlohmann::json::object()},
                {"warnings", {"w"}},
                {"precision_notes", nlohmann::json::array()}};
  return s;
}

// Requests in arrival order: an ordinary one, a one-token request (no inter-token gap), and one
// never admitted (its later times undefined).
std::vector<run::RequestTrace> requests(double shift) {
  run::RequestTrace a;
  a.arrival_s = 0.5 + shift;
  a.admitted_s = 0.625 + shift;
  a.first_token_s = 0.75 + shift;
  a.finish_s = 1.0 + shift;
  a.prompt = 48;
  a.output = 4;
  a.token_s = {0.75 + shift, 0.8 + shift, 0.95 + shift, 1.0 + shift};  // largest gap 0.15
  run::RequestTrace b;
  b.arrival_s = 0.625 + shift;
  b.admitted_s = 0.75 + shift;
  b.first_token_s = 0.875 + shift;
  b.finish_s = 0.875 + shift;
  b.prompt = 17;
  b.output = 1;
  b.token_s = {0.875 + shift};
  run::RequestTrace c;
  c.arrival_s = 1.5 + shift;
  c.prompt = 64;
  c.output = 32;
  return {a, b, c};
}

std::vector<run::IterationRecord> iterations(int count, double seconds, int32_t batch) {
  std::vector<run::IterationRecord> out;
  double t = 0;
  for (int i = 0; i < count; ++i) {
    run::IterationRecord it;
    // +-2% around `seconds`, the same pattern on every side.
    const double d = seconds * (1 + 0.01 * ((i * 7) % 5 - 2));
    it.start_s = t;
    it.end_s = t + d;
    t += d;
    it.decode_batch = batch;
    it.prefill_tokens = i % 3 == 0 ? 128 : 0;
    it.running = batch + 1;
    it.waiting = i % 4;
    it.kv_reserved_bytes = (int64_t{1} << 32) + i;
    it.kv_used_bytes = 1000 * i;
    out.push_back(it);
  }
  return out;
}

int64_t count_of(const std::string& db, const std::string& sql) {
  SQLite::Database raw(db, SQLite::OPEN_READONLY);
  return raw.execAndGet(sql).getInt64();
}

void expect_same(double expected, double actual, const char* what) {
  if (std::isnan(expected)) {
    EXPECT_TRUE(std::isnan(actual)) << what << " = " << actual;
  } else {
    EXPECT_DOUBLE_EQ(expected, actual) << what;
  }
}

void expect_same_measurement(const StoredServeMeasurement& a, const StoredServeMeasurement& b) {
  EXPECT_EQ(a.role, b.role);
  expect_same(a.offered_qps, b.offered_qps, "offered");
  expect_same(a.achieved_qps, b.achieved_qps, "achieved");
  EXPECT_EQ(a.queries, b.queries);
  EXPECT_EQ(a.over_bound, b.over_bound);
  EXPECT_EQ(a.largest_batch, b.largest_batch);
  for (const auto& [x, y, what] : {std::tuple{a.tail_s, b.tail_s, "tail"},
                                   {a.p50_s, b.p50_s, "p50"},
                                   {a.p90_s, b.p90_s, "p90"},
                                   {a.p99_s, b.p99_s, "p99"},
                                   {a.p999_s, b.p999_s, "p999"},
                                   {a.queueing_share, b.queueing_share, "queueing share"},
                                   {a.mean_batch, b.mean_batch, "mean batch"},
                                   {a.output_token_rate, b.output_token_rate, "output token rate"},
                                   {a.goodput_rate, b.goodput_rate, "goodput"},
                                   {a.ttft_tail_s, b.ttft_tail_s, "ttft tail"},
                                   {a.ttft_low_s, b.ttft_low_s, "ttft low"},
                                   {a.ttft_high_s, b.ttft_high_s, "ttft high"},
                                   {a.ttft_p50_s, b.ttft_p50_s, "ttft p50"},
                                   {a.ttft_p90_s, b.ttft_p90_s, "ttft p90"},
                                   {a.ttft_p99_s, b.ttft_p99_s, "ttft p99"},
                                   {a.tpot_tail_s, b.tpot_tail_s, "tpot tail"},
                                   {a.tpot_low_s, b.tpot_low_s, "tpot low"},
                                   {a.tpot_high_s, b.tpot_high_s, "tpot high"},
                                   {a.tpot_p50_s, b.tpot_p50_s, "tpot p50"},
                                   {a.tpot_p90_s, b.tpot_p90_s, "tpot p90"},
                                   {a.tpot_p99_s, b.tpot_p99_s, "tpot p99"},
                                   {a.itl_p50_s, b.itl_p50_s, "itl p50"},
                                   {a.itl_p99_s, b.itl_p99_s, "itl p99"},
                                   {a.queueing_mean_s, b.queueing_mean_s, "queueing mean"}})
    expect_same(x, y, what);
  EXPECT_EQ(a.verdict, b.verdict);
  EXPECT_EQ(a.output_tokens, b.output_tokens);
  EXPECT_EQ(a.good, b.good);
  EXPECT_EQ(a.ttft_over, b.ttft_over);
  EXPECT_EQ(a.ttft_verdict, b.ttft_verdict);
  EXPECT_EQ(a.tpot_over, b.tpot_over);
  EXPECT_EQ(a.tpot_verdict, b.tpot_verdict);
  EXPECT_EQ(a.peak_kv_reserved_bytes, b.peak_kv_reserved_bytes);
  EXPECT_EQ(a.peak_kv_used_bytes, b.peak_kv_used_bytes);
}

// A saved session: two measurements (the Offline ceiling, a trial whose undefined figures are
// NaN) with their traces.
struct Saved {
  StoredServeSession session;
  std::vector<run::TokenServeTrace> traces;
};

Saved save_token_session(ResultsStore& store) {
  Saved s{token_session(), {}};
  s.session.measurements = {token_measurement("offline", kNaN, 1.0),
                            token_measurement("trial", 2.5, 2.0, /*undefined=*/true)};
  s.traces.resize(2);
  s.traces[0].requests = requests(0);
  s.traces[0].iterations = iterations(5, 0.01, 4);
  s.traces[1].requests = requests(10);
  s.traces[1].iterations = iterations(7, 0.02, 3);
  store.save_token_serve_session(s.session, s.traces);
  return s;
}

TEST_F(TokenServeStore, SessionMeasurementsRequestsAndIterationsRoundTrip) {
  const std::string db = file("plumb.db");
  auto store = ResultsStore::open(db);
  const Saved saved = save_token_session(*store);
  EXPECT_GT(saved.session.id, 0);
  ASSERT_EQ(saved.session.measurements.size(), 2u);
  EXPECT_GT(saved.session.measurements[0].id, 0);
  EXPECT_GT(saved.session.measurements[1].id, saved.session.measurements[0].id);

  const auto sessions = ResultsStore::open(db, /*read_only=*/true)->load_serve_sessions();
  ASSERT_EQ(sessions.size(), 1u);
  const StoredServeSession& s = sessions[0];
  EXPECT_EQ(s.id, saved.session.id);
  EXPECT_EQ(s.kind, "token");
  EXPECT_EQ(s.scheduler, "continuous");
  EXPECT_EQ(s.chunk_tokens, 256);
  EXPECT_EQ(s.kv_budget_bytes, int64_t{5} << 32);
  EXPECT_DOUBLE_EQ(s.tpot_bound_s, 0.2);
  EXPECT_DOUBLE_EQ(s.burstiness, 0.5);
  EXPECT_DOUBLE_EQ(s.bound_s, 2.0);
  EXPECT_DOUBLE_EQ(s.found_qps, 2.5);
  EXPECT_DOUBLE_EQ(s.failed_qps, 3.25);
  EXPECT_TRUE(s.searched);
  EXPECT_EQ(s.setting, saved.session.setting);
  EXPECT_EQ(s.document, saved.session.document);
  ASSERT_EQ(s.measurements.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(s.measurements[i].id, saved.session.measurements[i].id);
    expect_same_measurement(saved.session.measurements[i], s.measurements[i]);
  }
  // NaN is stored as NULL.
  EXPECT_EQ(count_of(db,
                     "SELECT count(*) FROM serve_measurements WHERE itl_p99_s IS NULL AND "
                     "ttft_high_s IS NULL AND tpot_p99_s IS NULL"),
            1);

  for (size_t i = 0; i < 2; ++i) {
    SCOPED_TRACE(i);
    const int64_t id = s.measurements[i].id;
    const auto loaded = store->load_serve_requests(id);
    const auto& want = saved.traces[i].requests;
    ASSERT_EQ(loaded.size(), want.size());
    for (size_t r = 0; r < want.size(); ++r) {
      expect_same(want[r].arrival_s, loaded[r].arrival_s, "arrival");
      expect_same(want[r].admitted_s, loaded[r].admitted_s, "admitted");
      expect_same(want[r].first_token_s, loaded[r].first_token_s, "first token");
      expect_same(want[r].finish_s, loaded[r].finish_s, "finish");
      EXPECT_EQ(want[r].prompt, loaded[r].prompt);
      EXPECT_EQ(want[r].output, loaded[r].output);
      EXPECT_TRUE(loaded[r].token_s.empty());
    }
    const auto its = store->load_serve_iterations(id);
    const auto& want_its = saved.traces[i].iterations;
    ASSERT_EQ(its.size(), want_its.size());
    for (size_t k = 0; k < its.size(); ++k) {
      EXPECT_DOUBLE_EQ(its[k].start_s, want_its[k].start_s);
      EXPECT_DOUBLE_EQ(its[k].end_s, want_its[k].end_s);
      EXPECT_EQ(its[k].decode_batch, want_its[k].decode_batch);
      EXPECT_EQ(its[k].prefill_tokens, want_its[k].prefill_tokens);
      EXPECT_EQ(its[k].running, want_its[k].running);
      EXPECT_EQ(its[k].waiting, want_its[k].waiting);
      EXPECT_EQ(its[k].kv_reserved_bytes, want_its[k].kv_reserved_bytes);
      EXPECT_EQ(its[k].kv_used_bytes, want_its[k].kv_used_bytes);
    }
  }
  // The largest gap between a request's tokens; NULL for a one-token or unserved request.
  SQLite::Database raw(db, SQLite::OPEN_READONLY);
  SQLite::Statement gaps(raw,
                         "SELECT max_itl_s, admitted_s FROM serve_requests WHERE measurement_id "
                         "= ? ORDER BY rowid");
  gaps.bind(1, s.measurements[0].id);
  ASSERT_TRUE(gaps.executeStep());
  EXPECT_NEAR(gaps.getColumn(0).getDouble(), 0.15, 1e-12);
  ASSERT_TRUE(gaps.executeStep());
  EXPECT_TRUE(gaps.getColumn(0).isNull());
  ASSERT_TRUE(gaps.executeStep());
  EXPECT_TRUE(gaps.getColumn(0).isNull());
  EXPECT_TRUE(gaps.getColumn(1).isNull());
  EXPECT_TRUE(store->load_serve_requests(s.measurements[1].id + 1).empty());
  EXPECT_TRUE(store->load_serve_queries(s.measurements[0].id).empty());
}

TEST_F(TokenServeStore, ThousandsOfRequestsAndIterationsAreAllStored) {
  const std::string db = file("plumb.db");
  StoredServeSession s = token_session("offline", false);
  s.measurements = {token_measurement("offline", kNaN, 1.0)};
  std::vector<run::TokenServeTrace> traces(1);
  for (int i = 0; i < 3000; ++i) {
    auto r = requests(i)[0];
    r.prompt = i;
    traces[0].requests.push_back(r);
  }
  traces[0].iterations = iterations(12000, 0.001, 8);
  ResultsStore::open(db)->save_token_serve_session(s, traces);
  EXPECT_EQ(count_of(db, "SELECT count(*) FROM serve_requests"), 3000);
  EXPECT_EQ(count_of(db, "SELECT count(*) FROM serve_iterations"), 12000);
  EXPECT_EQ(count_of(db, "SELECT sum(prompt_tokens) FROM serve_requests"), 2999 * 3000 / 2);
  const auto loaded = ResultsStore::open(db, true)->load_serve_requests(s.measurements[0].id);
  ASSERT_EQ(loaded.size(), 3000u);
  EXPECT_EQ(loaded.back().prompt, 2999);  // in the order saved
}

// A one-shot session as plumb serve stores one.
StoredServeSession query_session() {
  StoredServeSession s;
  s.started_at = "2026-02-01T09:00:00Z";
  s.workload = "resnet50";
  s.scenario = "server";
  s.dtype = "fp32";
  s.setting = "plumb serve resnet50 --scenario server";
  s.command = "plumb serve resnet50";
  s.bound_s = 0.05;
  s.max_batch = 4;
  s.max_wait_s = 0.002;
  s.searched = false;
  s.found_qps = s.failed_qps = kNaN;
  s.environment = environment();
  s.document = {{"batch_sizes", {1, 2, 4}}, {"defaults", {{"bound_ms", 50}}}};
  StoredServeMeasurement m;
  m.role = "server";
  m.offered_qps = 20;
  m.achieved_qps = 19.5;
  m.queries = 2;
  m.tail_s = 0.03;
  m.tail_low_s = 0.02;
  m.tail_high_s = kNaN;
  m.p50_s = 0.01;
  m.p90_s = 0.02;
  m.p99_s = 0.03;
  m.p999_s = kNaN;
  m.verdict = "undecided";
  m.queueing_share = 0.25;
  m.mean_batch = 1.5;
  m.largest_batch = 2;
  s.measurements = {m};
  return s;
}

std::vector<std::vector<run::QueryTimes>> query_times() {
  run::QueryTimes a;
  a.arrival_s = 0;
  a.start_s = 0.001;
  a.finish_s = 0.011;
  a.batch = 2;
  run::QueryTimes b = a;
  b.arrival_s = 0.0005;
  b.worker = 0;
  return {{a, b}};
}

TEST_F(TokenServeStore, OneShotSessionsAreStoredAndPrintedAsBefore) {
  const std::string db = file("plumb.db");
  StoredServeSession saved = query_session();
  auto store = ResultsStore::open(db);
  store->save_serve_session(saved, query_times());
  EXPECT_GT(saved.id, 0);
  EXPECT_GT(saved.measurements[0].id, 0);
  const auto sessions = store->load_serve_sessions();
  ASSERT_EQ(sessions.size(), 1u);
  const auto& s = sessions[0];
  EXPECT_EQ(s.kind, "query");
  EXPECT_EQ(s.scheduler, "");
  EXPECT_EQ(s.chunk_tokens, 0);
  EXPECT_TRUE(std::isnan(s.tpot_bound_s));
  EXPECT_TRUE(std::isnan(s.burstiness));
  expect_same_measurement(saved.measurements[0], s.measurements[0]);
  EXPECT_EQ(store->load_serve_queries(s.measurements[0].id).size(), 2u);
  EXPECT_TRUE(store->load_serve_requests(s.measurements[0].id).empty());
  EXPECT_EQ(count_of(db, "SELECT count(*) FROM serve_sessions WHERE kind = 'query'"), 1);

  // The one-shot JSON: exactly the fields it had before token sessions (no kind).
  const auto j = serve_session_json(s);
  std::vector<std::string> keys;
  for (const auto& item : j.items()) keys.push_back(item.key());
  EXPECT_EQ(keys,
            (std::vector<std::string>{"session_id", "workload", "scenario", "dtype", "threads",
                                      "workers", "percentile", "bound_ms", "status", "message",
                                      "reachable", "batching", "at_found", "measurements",
                                      "defaults", "tag", "started_at", "command", "environment"}));
  std::vector<std::string> measurement_keys;
  for (const auto& item : j.at("measurements").at(0).items())
    measurement_keys.push_back(item.key());
  EXPECT_EQ(measurement_keys,
            (std::vector<std::string>{"id", "role", "offered_qps", "achieved_qps", "queries",
                                      "tail_ms", "tail_low_ms", "tail_high_ms", "p50_ms", "p90_ms",
                                      "p99_ms", "p999_ms", "verdict", "over_bound",
                                      "queueing_share", "mean_batch", "largest_batch"}));
  EXPECT_EQ(j.at("batching").dump(),
            R"({"max_batch":4,"max_wait_ms":2.0,"fixed_batch":false,"batch_sizes":[1,2,4]})");
  EXPECT_TRUE(j.at("measurements").at(0).at("tail_high_ms").is_null());
}

TEST_F(TokenServeStore, TokenSessionJsonNamesRatesAndBothBoundsInMilliseconds) {
  auto store = ResultsStore::open(file("plumb.db"));
  const Saved saved = save_token_session(*store);
  const auto s = store->load_serve_sessions().at(0);
  const auto j = serve_session_json(s);
  EXPECT_EQ(j.at("kind"), "token");
  EXPECT_EQ(j.at("scheduler"), "continuous");
  EXPECT_EQ(j.at("chunk_tokens"), 256);
  EXPECT_EQ(j.at("kv_budget_bytes"), int64_t{5} << 32);
  EXPECT_DOUBLE_EQ(j.at("burstiness").get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(j.at("bounds").at("ttft_ms").get<double>(), 2000);
  EXPECT_DOUBLE_EQ(j.at("bounds").at("tpot_ms").get<double>(), 200);
  EXPECT_DOUBLE_EQ(j.at("bounds").at("percentile").get<double>(), 99);
  EXPECT_DOUBLE_EQ(j.at("found_rate").get<double>(), 2.5);
  EXPECT_DOUBLE_EQ(j.at("failed_rate").get<double>(), 3.25);
  EXPECT_FALSE(j.contains("found_qps"));
  EXPECT_FALSE(j.contains("bound_ms"));
  EXPECT_DOUBLE_EQ(j.at("offline_output_token_rate").get<double>(), 101.5);
  EXPECT_DOUBLE_EQ(j.at("lone_ttft_ms").get<double>(), 12.5);
  EXPECT_EQ(j.at("lengths").at("describe"), "prompt 16-64, output 8-32");
  // The trial at 2.5 requests/s met both bounds: the measurement at the found rate.
  ASSERT_TRUE(j.contains("at_found"));
  const auto& trial = j.at("at_found");
  EXPECT_EQ(trial.at("role"), "trial");
  EXPECT_EQ(trial, j.at("measurements").at(1));
  EXPECT_DOUBLE_EQ(trial.at("offered_rate").get<double>(), 2.5);
  EXPECT_EQ(trial.at("requests"), 40);
  EXPECT_EQ(trial.at("output_tokens"), 1234);
  EXPECT_EQ(trial.at("good"), 37);
  EXPECT_DOUBLE_EQ(trial.at("ttft").at("tail_ms").get<double>(), 250);
  EXPECT_DOUBLE_EQ(trial.at("ttft").at("low_ms").get<double>(), 125);
  EXPECT_TRUE(trial.at("ttft").at("high_ms").is_null());
  EXPECT_EQ(trial.at("ttft").at("over"), 1);
  EXPECT_EQ(trial.at("tpot").at("verdict"), "undecided");
  EXPECT_TRUE(trial.at("tpot").at("p99_ms").is_null());
  EXPECT_DOUBLE_EQ(trial.at("tpot").at("p50_ms").get<double>(), 10);
  EXPECT_DOUBLE_EQ(trial.at("e2e_p50_ms").get<double>(), 1000);
  EXPECT_DOUBLE_EQ(trial.at("e2e_p99_ms").get<double>(), 1750);
  EXPECT_DOUBLE_EQ(trial.at("itl_p50_ms").get<double>(), 11);
  EXPECT_TRUE(trial.at("itl_p99_ms").is_null());
  EXPECT_DOUBLE_EQ(trial.at("queueing_mean_ms").get<double>(), 4.2);
  EXPECT_EQ(trial.at("peak_kv_reserved_bytes"), int64_t{3} << 33);
  EXPECT_FALSE(trial.contains("offered_qps"));
  EXPECT_TRUE(j.at("measurements").at(0).at("offered_rate").is_null());
}

TEST_F(TokenServeStore, SchemaFifteenIsUpgradedKeepingItsServeSessionsAsQueryKind) {
  const std::string today = file("today.db");
  {
    StoredServeSession s = query_session();
    ResultsStore::open(today)->save_serve_session(s, query_times());
  }
  const std::string db = testing::old_store(file("v15.db"), "v15", today);
  ASSERT_EQ(count_of(db, "PRAGMA user_version"), 15);
  ASSERT_EQ(count_of(db,
                     "SELECT count(*) FROM pragma_table_info('serve_sessions') WHERE name = "
                     "'kind'"),
            0);
  {  // Read as it is, without the columns it lacks.
    const auto sessions = ResultsStore::open(db, /*read_only=*/true)->load_serve_sessions();
    ASSERT_EQ(sessions.size(), 1u);
    EXPECT_EQ(sessions[0].kind, "query");
    EXPECT_DOUBLE_EQ(sessions[0].measurements.at(0).achieved_qps, 19.5);
    EXPECT_EQ(count_of(db, "PRAGMA user_version"), 15) << "reading changed nothing";
  }
  auto store = ResultsStore::open(db);
  EXPECT_EQ(count_of(db, "PRAGMA user_version"), kSchemaVersion);
  EXPECT_EQ(count_of(db,
                     "SELECT count(*) FROM serve_sessions WHERE kind = 'query' AND scheduler = "
                     "'' AND tpot_bound_s IS NULL"),
            1);
  EXPECT_EQ(count_of(db,
                     "SELECT count(*) FROM serve_measurements WHERE output_tokens = 0 AND "
                     "ttft_tail_s IS NULL AND ttft_verdict = ''"),
            1);
  const auto sessions = store->load_serve_sessions();
  ASSERT_EQ(sessions.size(), 1u);
  EXPECT_EQ(sessions[0].kind, "query");
  EXPECT_EQ(sessions[0].workload, "resnet50");
  EXPECT_EQ(store->load_serve_queries(sessions[0].measurements.at(0).id).size(), 2u);
  // The upgraded file takes token sessions.
  const Saved saved = save_token_session(*store);
  EXPECT_EQ(store->load_serve_sessions().size(), 2u);
  EXPECT_EQ(store->load_serve_iterations(saved.session.measurements[1].id).size(), 7u);
}

TEST_F(TokenServeStore, AFailedSaveLeavesNothingBehind) {
  const std::string db = file("plumb.db");
  auto store = ResultsStore::open(db);
  StoredServeSession kept = query_session();
  store->save_serve_session(kept, query_times());
  {
    SQLite::Database raw(db, SQLite::OPEN_READWRITE);
    // The last iteration of the second measurement fails, after everything else was written.
    raw.exec(
        "CREATE TRIGGER fail_iteration BEFORE INSERT ON serve_iterations WHEN NEW.decode_batch = "
        "3 AND NEW.waiting = 2 AND NEW.prefill_tokens = 128 "
        "BEGIN SELECT RAISE(ABORT, 'injected failure'); END");
  }
  Saved doomed{token_session(), {}};
  doomed.session.environment.host = "bench-02";  // a new environment row inside the transaction
  doomed.session.measurements = {token_measurement("offline", kNaN, 1.0),
                                 token_measurement("trial", 2.5, 2.0)};
  doomed.traces.resize(2);
  doomed.traces[0].requests = requests(0);
  doomed.traces[0].iterations = iterations(5, 0.01, 4);
  doomed.traces[1].requests = requests(10);
  doomed.traces[1].iterations = iterations(7, 0.02, 3);  // its 7th (i = 6) has waiting 2
  EXPECT_THROW(store->save_token_serve_session(doomed.session, doomed.traces), std::runtime_error);
  EXPECT_EQ(doomed.session.id, 0);
  EXPECT_EQ(doomed.session.measurements[0].id, 0);
  EXPECT_EQ(count_of(db, "SELECT count(*) FROM serve_sessions"), 1);
  EXPECT_EQ(count_of(db, "SELECT count(*) FROM serve_measurements"), 1);
  EXPECT_EQ(count_of(db, "SELECT count(*) FROM serve_requests"), 0);
  EXPECT_EQ(count_of(db, "SELECT count(*) FROM serve_iterations"), 0);
  EXPECT_EQ(count_of(db, "SELECT count(*) FROM environments"), 1);
  EXPECT_EQ(store->load_serve_sessions().at(0).id, kept.id);

  // A store opened read-only refuses the save and stores nothing.
  auto reader = ResultsStore::open(db, /*read_only=*/true);
  Saved refused{token_session(), {}};
  refused.session.measurements = {token_measurement("offline", kNaN, 1.0)};
  refused.traces.resize(1);
  refused.traces[0].requests = requests(0);
  EXPECT_ANY_THROW(reader->save_token_serve_session(refused.session, refused.traces));
  EXPECT_EQ(refused.session.id, 0);
  EXPECT_EQ(count_of(db, "SELECT count(*) FROM serve_sessions"), 1);
  EXPECT_EQ(count_of(db, "SELECT count(*) FROM serve_requests"), 0);
}

// plumb compare's rows for token sessions of one setting stored in two databases.
class TokenServeCompare : public TokenServeStore {
 protected:
  analysis::Comparison compare(const std::string& a, const std::string& b) {
    analysis::ComparisonRequest q;
    q.a.db = a;
    q.b.db = b;
    analysis::Comparison c;
    analysis::add_serve_rows(q, *ResultsStore::open(a, true), *ResultsStore::open(b, true), c);
    return c;
  }
};

TEST_F(TokenServeCompare, OfflineIsComparedOnOutputTokensPerSecondOfItsIterations) {
  const auto offline = [&](const std::string& name, double iteration_s) {
    StoredServeSession s = token_session("offline", false);
    s.measurements = {token_measurement("offline", kNaN, 1.0)};
    std::vector<run::TokenServeTrace> traces(1);
    traces[0].iterations = iterations(200, iteration_s, 8);
    ResultsStore::open(file(name))->save_token_serve_session(s, traces);
    return file(name);
  };
  const auto c = compare(offline("a.db", 0.010), offline("b.db", 0.005));
  ASSERT_EQ(c.rows.size(), 1u);
  const auto& row = c.rows[0];
  EXPECT_EQ(row.mode, "serve offline");
  EXPECT_EQ(row.throughput_unit, "output tokens/s");
  // 1234 output tokens over 200 iterations of about 10 ms: about 617 tokens/s.
  EXPECT_NEAR(row.throughput.throughput_a, 1234 / 2.0, 1234 / 2.0 * 0.02);
  EXPECT_NEAR(row.throughput.ratio, 2.0, 0.01);
  EXPECT_EQ(row.throughput.verdict, analysis::Verdict::kFaster);
  EXPECT_TRUE(c.only_in_a.empty());
  EXPECT_TRUE(c.only_in_b.empty());
}

TEST_F(TokenServeCompare, AGivenRateIsComparedOnItsTtftAndTpotTails) {
  const auto server = [&](const std::string& name, double ttft_scale) {
    StoredServeSession s = token_session("server", false);
    StoredServeMeasurement m = token_measurement("server", 2.0, 1.0);
    m.ttft_tail_s = 0.1 * ttft_scale;
    m.ttft_low_s = 0.09 * ttft_scale;
    m.ttft_high_s = 0.11 * ttft_scale;
    s.measurements = {m};
    ResultsStore::open(file(name))->save_token_serve_session(s, {run::TokenServeTrace{}});
    return file(name);
  };
  const auto c = compare(server("a.db", 1.0), server("b.db", 0.5));
  ASSERT_EQ(c.rows.size(), 2u);
  EXPECT_EQ(c.rows[0].mode, "serve server TTFT");
  EXPECT_EQ(c.rows[0].throughput_unit, "1 / TTFT p99 (1/s)");
  EXPECT_DOUBLE_EQ(c.rows[0].throughput.ratio, 2.0);  // B's TTFT is half of A's
  EXPECT_DOUBLE_EQ(c.rows[0].throughput.ci_low, 0.09 / 0.055);
  EXPECT_DOUBLE_EQ(c.rows[0].throughput.ci_high, 0.11 / 0.045);
  EXPECT_EQ(c.rows[0].throughput.verdict, analysis::Verdict::kFaster);
  EXPECT_EQ(c.rows[1].mode, "serve server TPOT");
  EXPECT_DOUBLE_EQ(c.rows[1].throughput.ratio, 1.0);
  EXPECT_EQ(c.rows[1].throughput.verdict, analysis::Verdict::kNoSignificantDifference);
}

TEST_F(TokenServeCompare, ASearchIsComparedOnItsFoundRequestRate) {
  const auto searched = [&](const std::string& name, double found, double failed) {
    StoredServeSession s = token_session("server", true);
    s.found_qps = found;
    s.failed_qps = failed;
    s.measurements = {token_measurement("trial", found, 1.0)};
    ResultsStore::open(file(name))->save_token_serve_session(s, {run::TokenServeTrace{}});
    return file(name);
  };
  const auto c = compare(searched("a.db", 2.0, 2.2), searched("b.db", 4.0, 4.4));
  ASSERT_EQ(c.rows.size(), 1u);
  EXPECT_EQ(c.rows[0].throughput_unit, "requests/s (found rate)");
  EXPECT_DOUBLE_EQ(c.rows[0].throughput.ratio, 2.0);
  EXPECT_DOUBLE_EQ(c.rows[0].throughput.ci_low, 4.0 / 2.2);
  EXPECT_EQ(c.rows[0].throughput.verdict, analysis::Verdict::kFaster);
  EXPECT_NE(c.rows[0].throughput.reason.find("req/s"), std::string::npos)
      << c.rows[0].throughput.reason;
  // Sessions of another setting are not matched.
  StoredServeSession other = token_session("server", true);
  other.setting += " --chunk 64";
  other.measurements = {token_measurement("trial", 2.0, 1.0)};
  ResultsStore::open(file("a.db"))->save_token_serve_session(other, {run::TokenServeTrace{}});
  const auto d = compare(file("a.db"), file("b.db"));
  EXPECT_EQ(d.rows.size(), 1u);
  ASSERT_EQ(d.only_in_a.size(), 1u);
  EXPECT_NE(d.only_in_a[0].find("--chunk 64"), std::string::npos);
}

}  // namespace plumb::store::token_serve_test
