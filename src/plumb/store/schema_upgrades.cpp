// Creating the results store's schema and upgrading an older one to it, version by version
// (see schema.h): the status lists of the CHECK constraints, the columns later versions add,
// and what a file of an older version carried in other places (legacy_*).
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include <SQLiteCpp/SQLiteCpp.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "plumb/core/errors.h"
#include "plumb/core/outcome.h"
#include "plumb/run/run_result.h"
#include "plumb/run/step_loop.h"
#include "plumb/store/results_store.h"
#include "plumb/store/schema.h"
#include "plumb/store/schema_sql.h"

namespace plumb::store::detail {

namespace {

// The status list of every CHECK constraint, from the one enum (run_result.h).
std::string status_list() {
  std::string out;
  for (run::RunStatus st : run::all_statuses())
    out += fmt::format("{}'{}'", out.empty() ? "" : ", ", run::status_name(st));
  return out;
}

// ... and of a sweep point's: a run's and the point's own timeout.
std::string point_status_list() {
  return status_list() + fmt::format(", '{}'", outcome_state_name(OutcomeState::kTimeout));
}

// The schema text with its placeholders filled in: the pass tables' shared columns, then the
// status lists.
std::string with_statuses(std::string sql) {
  for (const auto& [placeholder, list] :
       {std::pair<std::string, std::string>{"@PASS_COLUMNS@", kPassColumnsSql},
        {"@RECORD_COLUMNS@", kRecordColumnsSql},
        {"@POINT_STATUSES@", point_status_list()},
        {"@STATUSES@", status_list()}})
    for (auto at = sql.find(placeholder); at != std::string::npos; at = sql.find(placeholder))
      sql.replace(at, placeholder.size(), list);
  return sql;
}

// Version 7: the precision and memory format every record ran in (older records ran fp32,
// contiguous: plumb had no other), and what ran in which precision, per run.
void add_precision_columns(SQLite::Database& db) {
  const auto add = [&](const char* table, const char* column, const char* definition) {
    if (!has_column(db, table, column))
      db.exec(fmt::format("ALTER TABLE {} ADD COLUMN {} {}", table, column, definition));
  };
  for (const char* table : {"runs", "profiles", "memory_profiles"}) {
    add(table, "dtype", "TEXT NOT NULL DEFAULT 'fp32'");
    add(table, "memory_format", "TEXT NOT NULL DEFAULT 'contiguous'");
  }
  add("runs", "precision_json", "TEXT NOT NULL DEFAULT '[]'");
}

// Version 11: the convolution/GEMM engine and heap policy every record ran with (older records
// ran LibTorch's default oneDNN path and plumb's keep policy: there was no other).
void add_execution_columns(SQLite::Database& db) {
  for (const char* table : {"runs", "profiles", "memory_profiles"}) {
    if (!has_column(db, table, "engine"))
      db.exec(
          fmt::format("ALTER TABLE {} ADD COLUMN engine TEXT NOT NULL DEFAULT 'onednn'", table));
    if (!has_column(db, table, "heap"))
      db.exec(fmt::format("ALTER TABLE {} ADD COLUMN heap TEXT NOT NULL DEFAULT 'keep'", table));
  }
}

// Version 12: what a record did on purpose that changes its figures, stored rather than
// recognised from text: the testing aid's delay added to every step of a run (a new column),
// and a memory pass's --rss-check (its heap policy: return, the same mechanism). Records of an
// older file get both from where older plumbs left them (legacy_injected_delay_ms,
// legacy_rss_check).
void add_deliberate_settings_columns(SQLite::Database& db, bool backfill) {
  if (!has_column(db, "runs", "injected_delay_ms"))
    db.exec("ALTER TABLE runs ADD COLUMN injected_delay_ms REAL NOT NULL DEFAULT 0");
  if (!backfill) return;
  std::vector<std::pair<int64_t, double>> delays;
  SQLite::Statement runs(db, "SELECT id, warnings_json FROM runs WHERE instr(warnings_json, ?)");
  runs.bind(1, run::kInjectDelayVariable);
  while (runs.executeStep())
    delays.emplace_back(
        runs.getColumn(0).getInt64(),
        legacy_injected_delay_ms(
            nlohmann::json::parse(runs.getColumn(1).getString()).get<std::vector<std::string>>()));
  SQLite::Statement set_delay(db, "UPDATE runs SET injected_delay_ms = ? WHERE id = ?");
  for (const auto& [id, ms] : delays) {
    set_delay.bind(1, ms);
    set_delay.bind(2, id);
    set_delay.exec();
    set_delay.reset();
  }
  std::vector<int64_t> checked;
  SQLite::Statement passes(db, "SELECT id, command FROM memory_profiles");
  while (passes.executeStep())
    if (legacy_rss_check(passes.getColumn(1).getString()))
      checked.push_back(passes.getColumn(0).getInt64());
  for (const int64_t id : checked)
    db.exec(fmt::format("UPDATE memory_profiles SET heap = 'return' WHERE id = {}", id));
}

// SQLite cannot alter a CHECK constraint, so the table is rebuilt with the current status list
// (its documented procedure: create, copy, drop, rename; foreign keys are off on the upgrading
// connection, so dropping the old table cascades nothing), indexes included.
void widen_status_check(SQLite::Database& db, const std::string& table) {
  std::string sql;
  {  // statements finished before the table is dropped ("database table is locked")
    SQLite::Statement q(db, "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?");
    q.bind(1, table);
    PLUMB_ASSERT(q.executeStep(), "upgrading a table the schema does not have");
    sql = q.getColumn(0).getString();
  }
  const std::string check = "CHECK (status IN (";
  const auto begin = sql.find(check);
  if (begin == std::string::npos) return;  // no constraint to widen (an early v5 sweep_points)
  const auto list_begin = begin + check.size();
  const auto list_end = sql.find(')', list_begin);
  const std::string old_list = sql.substr(list_begin, list_end - list_begin);
  const bool point = old_list.find(fmt::format(
                         "'{}'", outcome_state_name(OutcomeState::kTimeout))) != std::string::npos;
  sql.replace(list_begin, list_end - list_begin, point ? point_status_list() : status_list());
  const std::string rebuilt = table + "__rebuilt";
  sql.replace(sql.find(table), table.size(), rebuilt);  // "CREATE TABLE <table> (" comes first
  std::vector<std::string> indexes;
  {
    SQLite::Statement iq(db,
                         "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND "
                         "sql IS NOT NULL");
    iq.bind(1, table);
    while (iq.executeStep()) indexes.push_back(iq.getColumn(0).getString());
  }
  db.exec(sql);
  db.exec(fmt::format("INSERT INTO {} SELECT * FROM {}", rebuilt, table));
  db.exec(fmt::format("DROP TABLE {}", table));
  db.exec(fmt::format("ALTER TABLE {} RENAME TO {}", rebuilt, table));
  for (const auto& index : indexes) db.exec(index);
}

}  // namespace

double legacy_injected_delay_ms(const std::vector<std::string>& warnings) {
  // "PLUMB_INJECT_STEP_DELAY_MS adds 5 ms to every step: ..." (the runner's wording until v12).
  const std::string prefix = std::string(run::kInjectDelayVariable) + " adds ";
  for (const auto& warning : warnings)
    if (warning.rfind(prefix, 0) == 0) return std::strtod(warning.c_str() + prefix.size(), nullptr);
  return 0;
}

bool legacy_rss_check(const std::string& command) {
  return command.find(" --rss-check") != std::string::npos;
}

// Version 13: how a profile pass observed its kept steps: the learning step's time and how many
// kept steps replayed the learned calls rather than boxing every operator's arguments. Older
// passes have neither (NULL: not recorded; they boxed every step).
void add_replay_columns(SQLite::Database& db) {
  if (!has_column(db, "profiles", "learning_step_s"))
    db.exec("ALTER TABLE profiles ADD COLUMN learning_step_s REAL");
  if (!has_column(db, "profiles", "replayed_steps"))
    db.exec("ALTER TABLE profiles ADD COLUMN replayed_steps INTEGER");
}

// Version 16: token-level serving. A session's kind (the sessions before it served one-shot
// queries: 'query'), its scheduler, chunk, KV budget, TPOT bound and arrivals' burstiness; a
// measurement's output tokens, goodput, TTFT and TPOT tails, inter-token percentiles, queueing
// and KV peaks. NULL where undefined, as every statistic; 0 and '' for a one-shot session's.
void add_token_serve_columns(SQLite::Database& db) {
  static const std::vector<std::pair<const char*, const char*>> session = {
      {"kind", "TEXT NOT NULL DEFAULT 'query'"},
      {"scheduler", "TEXT NOT NULL DEFAULT ''"},
      {"chunk_tokens", "INTEGER NOT NULL DEFAULT 0"},
      {"kv_budget_bytes", "INTEGER NOT NULL DEFAULT 0"},
      {"tpot_bound_s", "REAL"},
      {"burstiness", "REAL"}};
  static const std::vector<std::pair<const char*, const char*>> measurement = {
      {"output_tokens", "INTEGER NOT NULL DEFAULT 0"},
      {"good", "INTEGER NOT NULL DEFAULT 0"},
      {"output_token_rate", "REAL"},
      {"goodput_rate", "REAL"},
      {"ttft_tail_s", "REAL"},
      {"ttft_low_s", "REAL"},
      {"ttft_high_s", "REAL"},
      {"ttft_p50_s", "REAL"},
      {"ttft_p90_s", "REAL"},
      {"ttft_p99_s", "REAL"},
      {"ttft_over", "INTEGER NOT NULL DEFAULT 0"},
      {"ttft_verdict", "TEXT NOT NULL DEFAULT ''"},
      {"tpot_tail_s", "REAL"},
      {"tpot_low_s", "REAL"},
      {"tpot_high_s", "REAL"},
      {"tpot_p50_s", "REAL"},
      {"tpot_p90_s", "REAL"},
      {"tpot_p99_s", "REAL"},
      {"tpot_over", "INTEGER NOT NULL DEFAULT 0"},
      {"tpot_verdict", "TEXT NOT NULL DEFAULT ''"},
      {"itl_p50_s", "REAL"},
      {"itl_p99_s", "REAL"},
      {"queueing_mean_s", "REAL"},
      {"peak_kv_reserved_bytes", "INTEGER NOT NULL DEFAULT 0"},
      {"peak_kv_used_bytes", "INTEGER NOT NULL DEFAULT 0"}};
  for (const auto& [table, columns] :
       {std::pair{"serve_sessions", &session}, std::pair{"serve_measurements", &measurement}})
    for (const auto& [column, definition] : *columns)
      if (!has_column(db, table, column))
        db.exec(fmt::format("ALTER TABLE {} ADD COLUMN {} {}", table, column, definition));
}

void create_schema(SQLite::Database& db) {
  db.exec(with_statuses(kSchemaSql));
  db.exec(with_statuses(kProfilesSql));
  db.exec(kProbesSql);
  db.exec(with_statuses(kMemorySql));
  db.exec(with_statuses(kSweepsSql));
  add_precision_columns(db);
  db.exec(kPrecisionSql);
  db.exec(with_statuses(kDistSql));
  db.exec(kFusionSql);
  db.exec(with_statuses(kServeSql));
  add_execution_columns(db);
  db.exec(kTuneSql);
  add_deliberate_settings_columns(db, /*backfill=*/false);
  add_replay_columns(db);
  db.exec(kUntimedSql);
  db.exec(kGenerationSql);
  add_token_serve_columns(db);
  db.exec(kTokenServeSql);
  db.exec(fmt::format("PRAGMA application_id = {}", kApplicationId));
  db.exec(fmt::format("PRAGMA user_version = {}", kSchemaVersion));
}

void migrate_schema(SQLite::Database& db, int from) {
  PLUMB_ASSERT(from >= 1 && from < kSchemaVersion, "migration from an unknown schema version");
  if (from < 2) db.exec(with_statuses(kProfilesSql));
  if (from < 3) db.exec(kProbesSql);
  if (from < 4) db.exec(with_statuses(kMemorySql));
  if (from < 5) db.exec(with_statuses(kSweepsSql));
  if (from == 5 && !has_column(db, "sweep_points", "profile_id"))
    db.exec("ALTER TABLE sweep_points ADD COLUMN profile_id INTEGER REFERENCES profiles(id)");
  if (from < 7) {
    add_precision_columns(db);
    db.exec(kPrecisionSql);
    // Tables created before v7 by an older plumb carry the older status list.
    for (const char* table : {"runs", "profiles", "memory_profiles", "sweep_points"})
      widen_status_check(db, table);
  }
  if (from < 8) db.exec(with_statuses(kDistSql));
  if (from < 9) db.exec(kFusionSql);
  if (from < 10) db.exec(with_statuses(kServeSql));
  if (from < 11) {
    add_execution_columns(db);
    db.exec(kTuneSql);
  }
  if (from < 12) add_deliberate_settings_columns(db, /*backfill=*/true);
  if (from < 13) add_replay_columns(db);
  if (from < 14) db.exec(kUntimedSql);
  if (from < 15) db.exec(kGenerationSql);
  if (from < 16) {
    add_token_serve_columns(db);
    db.exec(kTokenServeSql);
  }
  db.exec(fmt::format("PRAGMA user_version = {}", kSchemaVersion));
}

}  // namespace plumb::store::detail
