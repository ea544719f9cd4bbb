// Persistence of plumb serve: serve_sessions, serve_measurements and serve_queries (schema v10;
// the token-level columns of v16, whose requests and iterations serve_token_store.cpp keeps), and
// a session's JSON.
#include <SQLiteCpp/SQLiteCpp.h>
#include <nlohmann/json.hpp>

#include "plumb/core/errors.h"
#include "plumb/core/json_number.h"
#include "plumb/core/json_text.h"
#include "plumb/run/serving_loop.h"
#include "plumb/store/record_json.h"
#include "plumb/store/results_store.h"
#include "plumb/store/rows.h"
#include "plumb/store/schema.h"
#include "plumb/store/serve_records.h"
#include "plumb/store/serve_rows.h"

namespace plumb::store {

namespace {

using Session = StoredServeSession;
using Measurement = StoredServeMeasurement;
// serve_sessions' own columns (besides id, status, environment and the whole document).
const std::vector<detail::ColumnOf<Session>> kSessionColumns = {
    {"started_at", &Session::started_at}, {"workload", &Session::workload},
    {"scenario", &Session::scenario},     {"dtype", &Session::dtype},
    {"setting", &Session::setting},       {"threads", &Session::threads},
    {"workers", &Session::workers},       {"bound_s", &Session::bound_s},
    {"percentile", &Session::percentile}, {"max_batch", &Session::max_batch},
    {"max_wait_s", &Session::max_wait_s}, {"fixed_batch", &Session::fixed_batch},
    {"searched", &Session::searched},     {"reachable", &Session::reachable},
    {"found_qps", &Session::found_qps},   {"failed_qps", &Session::failed_qps},
    {"message", &Session::message},       {"tag", &Session::tag},
    {"command", &Session::command}};
// serve_measurements' own columns (besides id and session_id).
const std::vector<detail::ColumnOf<Measurement>> kMeasurementColumns = {
    {"role", &Measurement::role},
    {"offered_qps", &Measurement::offered_qps},
    {"achieved_qps", &Measurement::achieved_qps},
    {"queries", &Measurement::queries},
    {"over_bound", &Measurement::over_bound},
    {"largest_batch", &Measurement::largest_batch},
    {"tail_s", &Measurement::tail_s},
    {"tail_low_s", &Measurement::tail_low_s},
    {"tail_high_s", &Measurement::tail_high_s},
    {"p50_s", &Measurement::p50_s},
    {"p90_s", &Measurement::p90_s},
    {"p99_s", &Measurement::p99_s},
    {"p999_s", &Measurement::p999_s},
    {"verdict", &Measurement::verdict},
    {"queueing_share", &Measurement::queueing_share},
    {"mean_batch", &Measurement::mean_batch}};
// The columns schema v16 added for token-level sessions: read only where the file has them (a
// file of an older schema read without upgrading lacks them).
const std::vector<detail::ColumnOf<Session>> kTokenSessionColumns = {
    {"kind", &Session::kind},
    {"scheduler", &Session::scheduler},
    {"chunk_tokens", &Session::chunk_tokens},
    {"kv_budget_bytes", &Session::kv_budget_bytes},
    {"tpot_bound_s", &Session::tpot_bound_s},
    {"burstiness", &Session::burstiness}};
const std::vector<detail::ColumnOf<Measurement>> kTokenMeasurementColumns = {
    {"output_tokens", &Measurement::output_tokens},
    {"good", &Measurement::good},
    {"output_token_rate", &Measurement::output_token_rate},
    {"goodput_rate", &Measurement::goodput_rate},
    {"ttft_tail_s", &Measurement::ttft_tail_s},
    {"ttft_low_s", &Measurement::ttft_low_s},
    {"ttft_high_s", &Measurement::ttft_high_s},
    {"ttft_p50_s", &Measurement::ttft_p50_s},
    {"ttft_p90_s", &Measurement::ttft_p90_s},
    {"ttft_p99_s", &Measurement::ttft_p99_s},
    {"ttft_over", &Measurement::ttft_over},
    {"ttft_verdict", &Measurement::ttft_verdict},
    {"tpot_tail_s", &Measurement::tpot_tail_s},
    {"tpot_low_s", &Measurement::tpot_low_s},
    {"tpot_high_s", &Measurement::tpot_high_s},
    {"tpot_p50_s", &Measurement::tpot_p50_s},
    {"tpot_p90_s", &Measurement::tpot_p90_s},
    {"tpot_p99_s", &Measurement::tpot_p99_s},
    {"tpot_over", &Measurement::tpot_over},
    {"tpot_verdict", &Measurement::tpot_verdict},
    {"itl_p50_s", &Measurement::itl_p50_s},
    {"itl_p99_s", &Measurement::itl_p99_s},
    {"queueing_mean_s", &Measurement::queueing_mean_s},
    {"peak_kv_reserved_bytes", &Measurement::peak_kv_reserved_bytes},
    {"peak_kv_used_bytes", &Measurement::peak_kv_used_bytes}};

// What a save writes: every column of the current schema.
template <class R>
std::vector<detail::ColumnOf<R>> joined_columns(std::vector<detail::ColumnOf<R>> first,
                                                const std::vector<detail::ColumnOf<R>>& then) {
  first.insert(first.end(), then.begin(), then.end());
  return first;
}
const auto kSessionWriteColumns = joined_columns(kSessionColumns, kTokenSessionColumns);
const auto kMeasurementWriteColumns = joined_columns(kMeasurementColumns, kTokenMeasurementColumns);

void insert_queries(SQLite::Database& db, int64_t measurement_id,
                    const std::vector<run::QueryTimes>& queries) {
  SQLite::Statement insert(db,
                           "INSERT INTO serve_queries (measurement_id, arrival_s, start_s, "
                           "finish_s, batch, worker) VALUES (?, ?, ?, ?, ?, ?)");
  for (const auto& q : queries) {
    insert.bind(1, measurement_id);
    insert.bind(2, q.arrival_s);
    insert.bind(3, q.start_s);
    insert.bind(4, q.finish_s);
    insert.bind(5, q.batch);
    insert.bind(6, q.worker);
    insert.exec();
    insert.reset();
  }
}

StoredServeMeasurement read_measurement(SQLite::Statement& q) {
  StoredServeMeasurement m;
  m.id = q.getColumn("id").getInt64();
  detail::read_columns(q, m, kMeasurementColumns);
  if (detail::has_result_column(q, "output_tokens"))
    detail::read_columns(q, m, kTokenMeasurementColumns);
  return m;
}

}  // namespace

namespace detail {

InsertedServeSession insert_serve_session(SQLite::Database& db, const StoredServeSession& s) {
  InsertedServeSession out;
  Row session_row;
  session_row.text("status", run::status_name(s.status));
  out.id = insert_documented_row(db, "serve_sessions", session_row, s, kSessionWriteColumns,
                                 json_text(s.document));
  for (const auto& m : s.measurements) {
    Row row;
    out.measurement_ids.push_back(
        write_columns(row.integer("session_id", out.id), m, kMeasurementWriteColumns)
            .insert_into(db, "serve_measurements"));
  }
  return out;
}

}  // namespace detail

void ResultsStore::save_serve_session(StoredServeSession& s,
                                      const std::vector<std::vector<run::QueryTimes>>& queries) {
  PLUMB_ASSERT(queries.size() == s.measurements.size(), "one query list per measurement");
  try {
    SQLite::Transaction tx(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    const auto inserted = detail::insert_serve_session(*db_, s);
    for (size_t i = 0; i < s.measurements.size(); ++i)
      insert_queries(*db_, inserted.measurement_ids[i], queries[i]);
    tx.commit();
    s.id = inserted.id;
    for (size_t i = 0; i < s.measurements.size(); ++i)
      s.measurements[i].id = inserted.measurement_ids[i];
  } catch (const SQLite::Exception& e) {
    detail::rethrow_save_error(e, "serving measurement of " + s.workload, path_);
  }
}

std::vector<StoredServeSession> ResultsStore::load_serve_sessions() const {
  return detail::guarded_read(path_, "serve sessions", [&]() -> std::vector<StoredServeSession> {
    std::vector<StoredServeSession> out;
    if (!detail::has_table(*db_, "serve_sessions")) return out;
    SQLite::Statement q(*db_,
                        detail::select_with_environment("serve_sessions", "s") + " ORDER BY s.id");
    SQLite::Statement m(*db_, "SELECT * FROM serve_measurements WHERE session_id = ? ORDER BY id");
    while (q.executeStep()) {
      auto s = detail::read_documented_row(q, kSessionColumns);
      if (detail::has_result_column(q, "kind")) detail::read_columns(q, s, kTokenSessionColumns);
      s.status = detail::status_from_name(q.getColumn("status").getString());
      s.document = nlohmann::ordered_json::parse(q.getColumn("json").getString());
      m.bind(1, s.id);
      while (m.executeStep()) s.measurements.push_back(read_measurement(m));
      m.reset();
      out.push_back(std::move(s));
    }
    return out;
  });
}

std::vector<run::QueryTimes> ResultsStore::load_serve_queries(int64_t measurement_id) const {
  return detail::guarded_read(path_, "serve queries", [&]() -> std::vector<run::QueryTimes> {
    std::vector<run::QueryTimes> out;
    if (!detail::has_table(*db_, "serve_queries")) return out;
    SQLite::Statement q(*db_,
                        "SELECT arrival_s, start_s, finish_s, batch, worker FROM serve_queries "
                        "WHERE measurement_id = ? ORDER BY rowid");
    q.bind(1, measurement_id);
    while (q.executeStep()) {
      run::QueryTimes t;
      t.arrival_s = q.getColumn(0).getDouble();
      t.start_s = q.getColumn(1).getDouble();
      t.finish_s = q.getColumn(2).getDouble();
      t.batch = q.getColumn(3).getInt();
      t.worker = q.getColumn(4).getInt();
      out.push_back(t);
    }
    return out;
  });
}

}  // namespace plumb::store

namespace plumb::store {

namespace {

nlohmann::ordered_json ms_or_null(double seconds) {
  return json_number(1e3 * seconds);
}

nlohmann::ordered_json measurement_json(const StoredServeMeasurement& m) {
  return {{"id", m.id},
          {"role", m.role},
          {"offered_qps", json_number(m.offered_qps)},
          {"achieved_qps", json_number(m.achieved_qps)},
          {"queries", m.queries},
          {"tail_ms", ms_or_null(m.tail_s)},
          {"tail_low_ms", ms_or_null(m.tail_low_s)},
          {"tail_high_ms", ms_or_null(m.tail_high_s)},
          {"p50_ms", ms_or_null(m.p50_s)},
          {"p90_ms", ms_or_null(m.p90_s)},
          {"p99_ms", ms_or_null(m.p99_s)},
          {"p999_ms", ms_or_null(m.p999_s)},
          {"verdict", m.verdict},
          {"over_bound", m.over_bound},
          {"queueing_share", json_number(m.queueing_share)},
          {"mean_batch", json_number(m.mean_batch)},
          {"largest_batch", m.largest_batch}};
}

// One latency of a token-level measurement (TTFT or TPOT): its tail at the bounds' percentile
// with the order-statistic interval, its percentiles, how many requests exceeded the bound and
// the bound's verdict.
nlohmann::ordered_json token_tail_json(double tail_s, double low_s, double high_s, double p50_s,
                                       double p90_s, double p99_s, int64_t over,
                                       const std::string& verdict) {
  return {{"tail_ms", ms_or_null(tail_s)},
          {"low_ms", ms_or_null(low_s)},
          {"high_ms", ms_or_null(high_s)},
          {"p50_ms", ms_or_null(p50_s)},
          {"p90_ms", ms_or_null(p90_s)},
          {"p99_ms", ms_or_null(p99_s)},
          {"over", over},
          {"verdict", verdict}};
}

// A token-level measurement: rates are requests per second, and the one-shot tail fields hold
// the end-to-end latency (e2e_*).
nlohmann::ordered_json token_measurement_json(const StoredServeMeasurement& m) {
  return {{"id", m.id},
          {"role", m.role},
          {"offered_rate", json_number(m.offered_qps)},
          {"achieved_rate", json_number(m.achieved_qps)},
          {"requests", m.queries},
          {"output_tokens", m.output_tokens},
          {"output_token_rate", json_number(m.output_token_rate)},
          {"good", m.good},
          {"goodput_rate", json_number(m.goodput_rate)},
          {"verdict", m.verdict},
          {"ttft", token_tail_json(m.ttft_tail_s, m.ttft_low_s, m.ttft_high_s, m.ttft_p50_s,
                                   m.ttft_p90_s, m.ttft_p99_s, m.ttft_over, m.ttft_verdict)},
          {"tpot", token_tail_json(m.tpot_tail_s, m.tpot_low_s, m.tpot_high_s, m.tpot_p50_s,
                                   m.tpot_p90_s, m.tpot_p99_s, m.tpot_over, m.tpot_verdict)},
          {"itl_p50_ms", ms_or_null(m.itl_p50_s)},
          {"itl_p99_ms", ms_or_null(m.itl_p99_s)},
          {"e2e_p50_ms", ms_or_null(m.p50_s)},
          {"e2e_p99_ms", ms_or_null(m.p99_s)},
          {"queueing_mean_ms", ms_or_null(m.queueing_mean_s)},
          {"mean_batch", json_number(m.mean_batch)},
          {"largest_batch", m.largest_batch},
          {"peak_kv_reserved_bytes", m.peak_kv_reserved_bytes},
          {"peak_kv_used_bytes", m.peak_kv_used_bytes}};
}

}  // namespace

const StoredServeMeasurement* serve_measurement(const StoredServeSession& s,
                                                const std::string& role) {
  for (const auto& m : s.measurements)
    if (m.role == role) return &m;
  return nullptr;
}

const StoredServeMeasurement* serve_found_measurement(const StoredServeSession& s) {
  if (!s.searched) return serve_measurement(s, "server");
  const StoredServeMeasurement* found = nullptr;
  for (const auto& m : s.measurements)
    if (m.role == "trial" && m.verdict == "met" && m.offered_qps == s.found_qps) found = &m;
  return found;
}

bool serve_bracket_is_ceiling(const StoredServeSession& s) {
  const auto* offline = serve_measurement(s, "offline");
  return s.searched && offline != nullptr && s.failed_qps == offline->achieved_qps;
}

namespace {

// The document keys a session's JSON carries through: those of every session, then a token-level
// session's (jobs/token_serve_record.cpp: the request lengths, why a default bound was scaled, the
// KV cache's sizes, a lone request's figures).
constexpr const char* kDocumentKeys[] = {"defaults", "config", "memory_format", "warnings",
                                         "precision_notes"};
constexpr const char* kTokenDocumentKeys[] = {
    "lengths",      "bound_notes",  "kv_bytes_per_position", "slot_positions",
    "lone_ttft_ms", "lone_tpot_ms", "full_batch_tpot_ms"};

// The JSON of a token-level session (docs/json.md): requests per second where the one-shot's
// says queries per second, both bounds, the scheduler's settings.
nlohmann::ordered_json token_session_json(const StoredServeSession& s) {
  nlohmann::ordered_json j = {{"session_id", s.id},
                              {"workload", s.workload},
                              {"kind", s.kind},
                              {"scenario", s.scenario},
                              {"dtype", s.dtype},
                              {"threads", s.threads},
                              {"workers", s.workers},
                              {"scheduler", s.scheduler},
                              {"chunk_tokens", s.chunk_tokens},
                              {"kv_budget_bytes", s.kv_budget_bytes},
                              {"burstiness", json_number(s.burstiness)},
                              {"status", run::status_name(s.status)},
                              {"message", s.message},
                              {"reachable", s.reachable}};
  j["bounds"] = {{"ttft_ms", ms_or_null(s.bound_s)},
                 {"tpot_ms", ms_or_null(s.tpot_bound_s)},
                 {"percentile", 100 * s.percentile}};
  j["batching"] = {{"max_batch", s.max_batch}, {"max_wait_ms", 1e3 * s.max_wait_s}};
  if (s.searched) {
    j["found_rate"] = json_number(s.found_qps);
    j["failed_rate"] = json_number(s.failed_qps);
    j["failed_is_ceiling"] = serve_bracket_is_ceiling(s);
  }
  if (const auto* found = serve_found_measurement(s))
    j["at_found"] = token_measurement_json(*found);
  if (const auto* m = serve_measurement(s, "offline")) {
    j["offline_rate"] = json_number(m->achieved_qps);
    j["offline_output_token_rate"] = json_number(m->output_token_rate);
  }
  j["measurements"] = nlohmann::ordered_json::array();
  for (const auto& m : s.measurements) j["measurements"].push_back(token_measurement_json(m));
  for (const char* key : kDocumentKeys)
    if (s.document.contains(key)) j[key] = s.document[key];
  for (const char* key : kTokenDocumentKeys)
    if (s.document.contains(key)) j[key] = s.document[key];
  j["tag"] = s.tag;
  j["started_at"] = s.started_at;
  j["command"] = s.command;
  j["environment"] = platform::to_json(s.environment);
  return j;
}

}  // namespace

nlohmann::ordered_json serve_session_json(const StoredServeSession& s) {
  if (s.kind == "token") return token_session_json(s);
  nlohmann::ordered_json j = {{"session_id", s.id},
                              {"workload", s.workload},
                              {"scenario", s.scenario},
                              {"dtype", s.dtype},
                              {"threads", s.threads},
                              {"workers", s.workers},
                              {"percentile", 100 * s.percentile},
                              {"bound_ms", 1e3 * s.bound_s},
                              {"status", run::status_name(s.status)},
                              {"message", s.message},
                              {"reachable", s.reachable}};
  j["batching"] = {{"max_batch", s.max_batch},
                   {"max_wait_ms", 1e3 * s.max_wait_s},
                   {"fixed_batch", s.fixed_batch}};
  for (const auto& key : {"batch_sizes", "service_ms", "batch_limit", "offline_batch"})
    if (s.document.contains(key)) j["batching"][key] = s.document[key];
  if (s.searched) {
    j["found_qps"] = json_number(s.found_qps);
    j["failed_qps"] = json_number(s.failed_qps);
    j["failed_is_ceiling"] = serve_bracket_is_ceiling(s);
  }
  if (const auto* found = serve_found_measurement(s)) {
    j["at_found"] = measurement_json(*found);
  }
  if (const auto* m = serve_measurement(s, "offline"))
    j["offline_qps"] = json_number(m->achieved_qps);
  if (const auto* m = serve_measurement(s, "single-stream")) {
    j["single_stream_ms"] = {{"p50", ms_or_null(m->p50_s)},
                             {"p90", ms_or_null(m->p90_s)},
                             {"p99", ms_or_null(m->p99_s)}};
  }
  j["measurements"] = nlohmann::ordered_json::array();
  for (const auto& m : s.measurements) j["measurements"].push_back(measurement_json(m));
  for (const char* key : kDocumentKeys)
    if (s.document.contains(key)) j[key] = s.document[key];
  j["tag"] = s.tag;
  j["started_at"] = s.started_at;
  j["command"] = s.command;
  j["environment"] = platform::to_json(s.environment);
  return j;
}

}  // namespace plumb::store
