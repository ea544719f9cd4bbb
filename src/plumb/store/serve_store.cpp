// Persistence of plumb serve: serve_sessions, serve_measurements and serve_queries (schema v10).
#include <SQLiteCpp/SQLiteCpp.h>
#include <nlohmann/json.hpp>

#include "plumb/core/errors.h"
#include "plumb/core/json_number.h"
#include "plumb/core/json_text.h"
#include "plumb/store/results_store.h"
#include "plumb/store/rows.h"
#include "plumb/store/schema.h"

namespace plumb::store {

namespace {

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
  m.role = q.getColumn("role").getString();
  m.offered_qps = detail::real_or_nan(q.getColumn("offered_qps"));
  m.achieved_qps = detail::real_or_nan(q.getColumn("achieved_qps"));
  m.queries = q.getColumn("queries").getInt64();
  m.over_bound = q.getColumn("over_bound").getInt64();
  m.largest_batch = q.getColumn("largest_batch").getInt64();
  m.tail_s = detail::real_or_nan(q.getColumn("tail_s"));
  m.tail_low_s = detail::real_or_nan(q.getColumn("tail_low_s"));
  m.tail_high_s = detail::real_or_nan(q.getColumn("tail_high_s"));
  m.p50_s = detail::real_or_nan(q.getColumn("p50_s"));
  m.p90_s = detail::real_or_nan(q.getColumn("p90_s"));
  m.p99_s = detail::real_or_nan(q.getColumn("p99_s"));
  m.p999_s = detail::real_or_nan(q.getColumn("p999_s"));
  m.verdict = q.getColumn("verdict").getString();
  m.queueing_share = detail::real_or_nan(q.getColumn("queueing_share"));
  m.mean_batch = detail::real_or_nan(q.getColumn("mean_batch"));
  return m;
}

}  // namespace

void ResultsStore::save_serve_session(StoredServeSession& s,
                                      const std::vector<std::vector<run::QueryTimes>>& queries) {
  PLUMB_ASSERT(queries.size() == s.measurements.size(), "one query list per measurement");
  try {
    SQLite::Transaction tx(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    const int64_t environment_id = detail::save_environment(*db_, s.environment);
    const int64_t id = detail::Row()
                           .text("started_at", s.started_at)
                           .text("workload", s.workload)
                           .text("scenario", s.scenario)
                           .text("dtype", s.dtype)
                           .text("setting", s.setting)
                           .integer("threads", s.threads)
                           .integer("workers", s.workers)
                           .real("bound_s", s.bound_s)
                           .real("percentile", s.percentile)
                           .integer("max_batch", s.max_batch)
                           .real("max_wait_s", s.max_wait_s)
                           .boolean("fixed_batch", s.fixed_batch)
                           .boolean("searched", s.searched)
                           .boolean("reachable", s.reachable)
                           .real("found_qps", s.found_qps)
                           .real("failed_qps", s.failed_qps)
                           .text("status", run::status_name(s.status))
                           .text("message", s.message)
                           .text("tag", s.tag)
                           .text("command", s.command)
                           .integer("environment_id", environment_id)
                           .text("json", json_text(s.document))
                           .insert_into(*db_, "serve_sessions");
    for (size_t i = 0; i < s.measurements.size(); ++i) {
      auto& m = s.measurements[i];
      m.id = detail::Row()
                 .integer("session_id", id)
                 .text("role", m.role)
                 .real("offered_qps", m.offered_qps)
                 .real("achieved_qps", m.achieved_qps)
                 .integer("queries", m.queries)
                 .integer("over_bound", m.over_bound)
                 .integer("largest_batch", m.largest_batch)
                 .real("tail_s", m.tail_s)
                 .real("tail_low_s", m.tail_low_s)
                 .real("tail_high_s", m.tail_high_s)
                 .real("p50_s", m.p50_s)
                 .real("p90_s", m.p90_s)
                 .real("p99_s", m.p99_s)
                 .real("p999_s", m.p999_s)
                 .text("verdict", m.verdict)
                 .real("queueing_share", m.queueing_share)
                 .real("mean_batch", m.mean_batch)
                 .insert_into(*db_, "serve_measurements");
      insert_queries(*db_, m.id, queries[i]);
    }
    tx.commit();
    s.id = id;
  } catch (const SQLite::Exception& e) {
    detail::rethrow_save_error(e, "serving measurement of " + s.workload, path_);
  }
}

std::vector<StoredServeSession> ResultsStore::load_serve_sessions() const {
  return detail::guarded_read(path_, "serve sessions", [&]() -> std::vector<StoredServeSession> {
    std::vector<StoredServeSession> out;
    if (!detail::has_table(*db_, "serve_sessions")) return out;
    SQLite::Statement q(*db_,
                        "SELECT s.*, e.json AS env_json FROM serve_sessions s JOIN environments e "
                        "ON e.id = s.environment_id ORDER BY s.id");
    SQLite::Statement m(*db_, "SELECT * FROM serve_measurements WHERE session_id = ? ORDER BY id");
    while (q.executeStep()) {
      StoredServeSession s;
      s.id = q.getColumn("id").getInt64();
      s.started_at = q.getColumn("started_at").getString();
      s.workload = q.getColumn("workload").getString();
      s.scenario = q.getColumn("scenario").getString();
      s.dtype = q.getColumn("dtype").getString();
      s.setting = q.getColumn("setting").getString();
      s.threads = q.getColumn("threads").getInt();
      s.workers = q.getColumn("workers").getInt();
      s.bound_s = q.getColumn("bound_s").getDouble();
      s.percentile = q.getColumn("percentile").getDouble();
      s.max_batch = q.getColumn("max_batch").getInt64();
      s.max_wait_s = q.getColumn("max_wait_s").getDouble();
      s.fixed_batch = q.getColumn("fixed_batch").getInt() != 0;
      s.searched = q.getColumn("searched").getInt() != 0;
      s.reachable = q.getColumn("reachable").getInt() != 0;
      s.found_qps = detail::real_or_nan(q.getColumn("found_qps"));
      s.failed_qps = detail::real_or_nan(q.getColumn("failed_qps"));
      s.status = detail::status_from_name(q.getColumn("status").getString());
      s.message = q.getColumn("message").getString();
      s.tag = q.getColumn("tag").getString();
      s.command = q.getColumn("command").getString();
      s.environment = platform::environment_from_json(
          nlohmann::json::parse(q.getColumn("env_json").getString()));
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

nlohmann::ordered_json serve_session_json(const StoredServeSession& s) {
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
  for (const auto& key : {"defaults", "config", "memory_format", "warnings", "precision_notes"})
    if (s.document.contains(key)) j[key] = s.document[key];
  j["tag"] = s.tag;
  j["started_at"] = s.started_at;
  j["command"] = s.command;
  j["environment"] = platform::to_json(s.environment);
  return j;
}

}  // namespace plumb::store
