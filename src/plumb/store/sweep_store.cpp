// Persistence of sweeps: the `sweeps` and `sweep_points` tables (schema v5), and merging the
// sweeps of another database (shards) into this one.
#include <map>
#include <set>

#include <SQLiteCpp/SQLiteCpp.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "plumb/core/clock.h"
#include "plumb/core/json_text.h"
#include "plumb/store/profile_records.h"
#include "plumb/store/results_store.h"
#include "plumb/store/rows.h"
#include "plumb/store/schema.h"
#include "plumb/store/sweep_records.h"

namespace plumb::store {
namespace {

// sweeps' columns besides id.
const std::vector<detail::ColumnOf<StoredSweep>> kSweepColumns = {
    {"name", &StoredSweep::name},
    {"workload", &StoredSweep::workload},
    {"spec_json", &StoredSweep::spec},
    {"created_at", &StoredSweep::created_at},
    {"points", &StoredSweep::points}};

StoredSweep read_sweep_row(const SQLite::Statement& st) {
  StoredSweep s;
  s.id = st.getColumn("id").getInt64();
  detail::read_columns(st, s, kSweepColumns);
  return s;
}

// `with_profile_id`: false for a schema-5 file from before 537b71d, read without upgrading.
SweepPointRecord read_point_row(const SQLite::Statement& st, bool with_profile_id) {
  SweepPointRecord p;
  p.id = st.getColumn("id").getInt64();
  p.sweep_id = st.getColumn("sweep_id").getInt64();
  p.index = st.getColumn("point_index").getInt64();
  p.key = st.getColumn("point_key").getString();
  p.mode = st.getColumn("mode").getString();
  p.params = nlohmann::ordered_json::parse(st.getColumn("params_json").getString());
  p.status = st.getColumn("status").getString();
  p.message = st.getColumn("message").getString();
  p.run_id = st.getColumn("run_id").isNull() ? 0 : st.getColumn("run_id").getInt64();
  p.memory_id = st.getColumn("memory_id").isNull() ? 0 : st.getColumn("memory_id").getInt64();
  if (with_profile_id && !st.getColumn("profile_id").isNull())
    p.profile_id = st.getColumn("profile_id").getInt64();
  p.metrics = nlohmann::ordered_json::parse(st.getColumn("metrics_json").getString());
  p.warmup_s = st.getColumn("warmup_s").getDouble();
  p.measure_s = st.getColumn("measure_s").getDouble();
  p.wall_s = st.getColumn("wall_s").getDouble();
  p.shard = st.getColumn("shard").getString();
  p.finished_at = st.getColumn("finished_at").getString();
  return p;
}

int64_t insert_point(SQLite::Database& db, const SweepPointRecord& p) {
  detail::Row row;
  row.integer("sweep_id", p.sweep_id)
      .integer("point_index", p.index)
      .text("point_key", p.key)
      .text("mode", p.mode)
      .text("params_json", json_text(p.params))
      .text("status", p.status)
      .text("message", p.message);
  if (p.run_id > 0) {
    row.integer("run_id", p.run_id);
  } else {
    row.null("run_id");
  }
  if (p.memory_id > 0) {
    row.integer("memory_id", p.memory_id);
  } else {
    row.null("memory_id");
  }
  if (p.profile_id > 0) {
    row.integer("profile_id", p.profile_id);
  } else {
    row.null("profile_id");
  }
  return row.text("metrics_json", json_text(p.metrics))
      .real("warmup_s", p.warmup_s)
      .real("measure_s", p.measure_s)
      .real("wall_s", p.wall_s)
      .text("shard", p.shard)
      .text("finished_at", p.finished_at)
      .insert_into(db, "sweep_points");
}

std::optional<StoredSweep> sweep_named(SQLite::Database& db, const std::string& name) {
  if (!detail::has_table(db, "sweeps")) return std::nullopt;
  SQLite::Statement q(db, "SELECT * FROM sweeps WHERE name = ?");
  q.bind(1, name);
  if (!q.executeStep()) return std::nullopt;
  return read_sweep_row(q);
}

UsageError different_spec(const std::string& name, const std::string& where) {
  return UsageError(fmt::format(
      "a different sweep named '{}' is already in {}: a sweep's name identifies its points, so "
      "it cannot hold two specs; give this one another name or use another database",
      name, where));
}

// Copies the rows of `table` where `column` = `value` from `from` to `to`, with `overrides`
// replacing columns (foreign keys) and the `id` column left to the new database; returns the
// id of the last row inserted.
int64_t copy_rows(SQLite::Database& from, SQLite::Database& to, const std::string& table,
                  const std::string& column, int64_t value,
                  const std::map<std::string, int64_t>& overrides) {
  SQLite::Statement q(from, fmt::format("SELECT * FROM {} WHERE {} = ?", table, column));
  q.bind(1, value);
  int64_t last = 0;
  while (q.executeStep()) {
    detail::Row row;
    for (int i = 0; i < q.getColumnCount(); ++i) {
      const SQLite::Column c = q.getColumn(i);
      const std::string name = c.getName();
      if (name == "id") continue;
      auto o = overrides.find(name);
      if (o != overrides.end()) {
        row.integer(o->first.c_str(), o->second);
      } else {
        row.column_value(c);
      }
    }
    last = row.insert_into(to, table.c_str());
  }
  return last;
}

// The environment of a row in `from`, saved (or found) in `to`.
int64_t copy_environment(SQLite::Database& from, SQLite::Database& to, int64_t id) {
  SQLite::Statement q(from, "SELECT json FROM environments WHERE id = ?");
  q.bind(1, id);
  PLUMB_ASSERT(q.executeStep(), "a stored record without its environment");
  return detail::save_environment(
      to, platform::environment_from_json(nlohmann::json::parse(q.getColumn(0).getString())));
}

int64_t environment_of(SQLite::Database& db, const std::string& table, int64_t id) {
  SQLite::Statement q(db, fmt::format("SELECT environment_id FROM {} WHERE id = ?", table));
  q.bind(1, id);
  PLUMB_ASSERT(q.executeStep(), "a sweep point refers to a missing row");
  return q.getColumn(0).getInt64();
}

}  // namespace

int64_t ResultsStore::register_sweep(const std::string& name, const std::string& workload,
                                     const std::string& spec, int64_t points) {
  try {
    SQLite::Transaction tx(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    if (auto existing = sweep_named(*db_, name)) {
      if (existing->spec != spec) throw different_spec(name, path_);
      return existing->id;
    }
    const StoredSweep sweep{0, name, workload, spec, utc_now_iso8601(), points};
    detail::Row row;
    const int64_t id = detail::write_columns(row, sweep, kSweepColumns).insert_into(*db_, "sweeps");
    tx.commit();
    return id;
  } catch (const SQLite::Exception& e) {
    detail::rethrow_save_error(e, "sweep " + name, path_);
  }
}

std::vector<StoredSweep> ResultsStore::load_sweeps() const {
  return detail::guarded_read(path_, "sweeps", [&]() -> std::vector<StoredSweep> {
    if (!detail::has_table(*db_, "sweeps")) return {};
    SQLite::Statement q(*db_, "SELECT * FROM sweeps ORDER BY id");
    std::vector<StoredSweep> out;
    while (q.executeStep()) out.push_back(read_sweep_row(q));
    return out;
  });
}

std::optional<StoredSweep> ResultsStore::find_sweep(const std::string& name) const {
  return detail::guarded_read(
      path_, "sweeps", [&]() -> std::optional<StoredSweep> { return sweep_named(*db_, name); });
}

std::vector<SweepPointRecord> ResultsStore::load_sweep_points(int64_t sweep_id) const {
  return detail::guarded_read(path_, "sweep points", [&]() -> std::vector<SweepPointRecord> {
    if (!detail::has_table(*db_, "sweep_points")) return {};
    const bool with_profile_id = detail::has_column(*db_, "sweep_points", "profile_id");
    SQLite::Statement q(*db_, "SELECT * FROM sweep_points WHERE sweep_id = ? ORDER BY point_index");
    q.bind(1, sweep_id);
    std::vector<SweepPointRecord> out;
    while (q.executeStep()) out.push_back(read_point_row(q, with_profile_id));
    return out;
  });
}

int64_t ResultsStore::save_sweep_point(SweepPointRecord& point, const run::RunOptions& options,
                                       const run::RunResult& run,
                                       const profile::MemoryProfileResult* memory,
                                       const profile::ProfileResult* profile,
                                       const platform::Environment& environment,
                                       const std::string& tag) {
  try {
    SQLite::Transaction tx(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    point.run_id = detail::insert_run(*db_, options, run, environment, tag);
    if (memory != nullptr)
      point.memory_id =
          detail::insert_memory_profile(*db_, options, *memory, environment,
                                        kSweepGroupPrefix + std::to_string(point.sweep_id), tag);
    if (profile != nullptr)
      point.profile_id =
          detail::insert_profile(*db_, options, *profile, environment,
                                 kSweepGroupPrefix + std::to_string(point.sweep_id), tag);
    point.id = insert_point(*db_, point);
    tx.commit();
    return point.id;
  } catch (const SQLite::Exception& e) {
    detail::rethrow_save_error(e, "sweep point " + point.key, path_, detail::measured_run(run));
  }
}

MergeReport ResultsStore::merge_from(const std::string& path) {
  detail::check_path(path, /*read_only=*/true);
  SQLite::Database other(detail::has_side_files(path) ? path : detail::immutable_uri(path),
                         SQLite::OPEN_READONLY | SQLite::OPEN_URI);
  const detail::DbIdentity identity = detail::read_identity(other);
  // v5 files are read as they are: v6 only guarantees sweep_points.profile_id, which the
  // points are read without when it is missing.
  constexpr int kFirstSchemaWithSweeps = 5;
  if (identity.user_version < kFirstSchemaWithSweeps || identity.user_version > kSchemaVersion)
    throw UsageError(fmt::format(
        "cannot merge '{}': it has schema version {} and this plumb merges versions {} to {}; "
        "open it once with a plumb of its version's successor that writes (e.g. `plumb "
        "export`) or re-run its sweep with this plumb",
        path, identity.user_version, kFirstSchemaWithSweeps, kSchemaVersion));
  std::vector<StoredSweep> sweeps;
  {
    SQLite::Statement q(other, "SELECT * FROM sweeps ORDER BY id");
    while (q.executeStep()) sweeps.push_back(read_sweep_row(q));
  }
  // Refuse before writing anything.
  for (const auto& s : sweeps)
    if (auto mine = sweep_named(*db_, s.name); mine && mine->spec != s.spec)
      throw different_spec(s.name, path_ + " (merging " + path + ")");
  const bool with_profile_id = detail::has_column(other, "sweep_points", "profile_id");
  MergeReport report;
  try {
    SQLite::Transaction tx(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    for (const auto& s : sweeps) {
      auto mine = sweep_named(*db_, s.name);
      if (!mine) ++report.sweeps_added;
      const int64_t sweep_id = mine ? mine->id
                                    : detail::Row()
                                          .text("name", s.name)
                                          .text("workload", s.workload)
                                          .text("spec_json", s.spec)
                                          .text("created_at", s.created_at)
                                          .integer("points", s.points)
                                          .insert_into(*db_, "sweeps");
      std::set<std::string> present;
      for (const auto& p : load_sweep_points(sweep_id)) present.insert(p.key);
      SQLite::Statement q(other, "SELECT * FROM sweep_points WHERE sweep_id = ? ORDER BY id");
      q.bind(1, s.id);
      while (q.executeStep()) {
        SweepPointRecord p = read_point_row(q, with_profile_id);
        if (!present.insert(p.key).second) {
          ++report.points_already_present;
          continue;
        }
        p.sweep_id = sweep_id;
        if (p.run_id > 0) {
          const int64_t env =
              copy_environment(other, *db_, environment_of(other, "runs", p.run_id));
          const int64_t run_id =
              copy_rows(other, *db_, "runs", "id", p.run_id, {{"environment_id", env}});
          copy_rows(other, *db_, "samples", "run_id", p.run_id, {{"run_id", run_id}});
          p.run_id = run_id;
        }
        if (p.memory_id > 0) {
          const int64_t env =
              copy_environment(other, *db_, environment_of(other, "memory_profiles", p.memory_id));
          p.memory_id = copy_rows(other, *db_, "memory_profiles", "id", p.memory_id,
                                  {{"environment_id", env}});
        }
        if (p.profile_id > 0) {
          const int64_t env =
              copy_environment(other, *db_, environment_of(other, "profiles", p.profile_id));
          const int64_t profile_id =
              copy_rows(other, *db_, "profiles", "id", p.profile_id, {{"environment_id", env}});
          copy_rows(other, *db_, "op_stats", "profile_id", p.profile_id,
                    {{"profile_id", profile_id}});
          if (detail::has_table(other, "profile_graphs"))
            copy_rows(other, *db_, "profile_graphs", "profile_id", p.profile_id,
                      {{"profile_id", profile_id}});
          p.profile_id = profile_id;
        }
        insert_point(*db_, p);
        ++report.points_added;
      }
    }
    tx.commit();
  } catch (const SQLite::Exception& e) {
    detail::rethrow_save_error(e, "merge of " + path, path_);
  }
  return report;
}

}  // namespace plumb::store
