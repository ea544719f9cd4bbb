// The results store's schema (v1 tables, then each version's additions), and the checks open() runs
// before touching a file: that its directory and file can be written, and that it is a plumb
// database rather than a blank file, a foreign database or one written by a newer plumb (see
// schema.h).
#include "plumb/store/schema.h"

#include <unistd.h>

#include <array>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <utility>
#include <vector>

#include <SQLiteCpp/SQLiteCpp.h>
#include <fmt/format.h>
#include <sqlite3.h>
#include <nlohmann/json.hpp>

#include "plumb/core/errors.h"
#include "plumb/run/run_result.h"
#include "plumb/run/step_loop.h"
#include "plumb/store/results_store.h"

namespace plumb::store::detail {

namespace fs = std::filesystem;

namespace {

// Summary statistics are columns (not JSON) so that ad-hoc SQL can filter and sort on them;
// NULL means undefined (NaN in memory). The full environment is kept as JSON as well, so a
// field added later needs no migration to be stored; its columns are for querying.
constexpr const char* kSchemaSql = R"sql(
CREATE TABLE environments (
  id               INTEGER PRIMARY KEY,
  host             TEXT NOT NULL,
  os               TEXT NOT NULL,
  cpu_model        TEXT NOT NULL,
  isa_json         TEXT NOT NULL,
  logical_cores    INTEGER NOT NULL,
  threads_used     INTEGER NOT NULL,
  load_average_1m  REAL,
  cpu_governor     TEXT NOT NULL,
  libtorch_version TEXT NOT NULL,
  blas             TEXT NOT NULL,
  blas_optimized   INTEGER NOT NULL,
  onednn_version   TEXT NOT NULL,
  plumb_version    TEXT NOT NULL,
  git_commit       TEXT NOT NULL,
  compiler         TEXT NOT NULL,
  device           TEXT NOT NULL,
  warnings_json    TEXT NOT NULL,
  json             TEXT NOT NULL UNIQUE
);

CREATE TABLE runs (
  id                INTEGER PRIMARY KEY AUTOINCREMENT,
  started_at        TEXT NOT NULL,
@RECORD_COLUMNS@
  throughput        REAL,
  throughput_unit   TEXT NOT NULL,
  units_per_step    REAL,
  wall_seconds      REAL,
  steady_detected   INTEGER NOT NULL,
  target_met        INTEGER NOT NULL,
  warmup_iterations INTEGER NOT NULL,
  last_loss         REAL,
  cpu_utilization   REAL,
  warnings_json     TEXT NOT NULL,
  n                 INTEGER NOT NULL,
  mean              REAL,
  median            REAL,
  min               REAL,
  p5                REAL,
  p95               REAL,
  max               REAL,
  stddev            REAL,
  cv                REAL,
  ci_half_width     REAL,
  ci_rel            REAL,
  p50               REAL,
  p90               REAL,
  p99               REAL
);
CREATE INDEX runs_by_workload ON runs (workload, mode);

CREATE TABLE samples (
  run_id  INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  phase   TEXT NOT NULL CHECK (phase IN ('warmup', 'measure')),
  idx     INTEGER NOT NULL,
  seconds REAL NOT NULL,
  PRIMARY KEY (run_id, phase, idx)
) WITHOUT ROWID;
)sql";

// What every record (run, profiling or memory pass) says was executed, where, and how it ended
// (detail::write_record_columns writes most of them).
constexpr const char* kRecordColumnsSql = R"sql(  workload        TEXT NOT NULL,
  mode            TEXT NOT NULL CHECK (mode IN ('train', 'infer')),
  batch           INTEGER NOT NULL,
  threads         INTEGER NOT NULL,
  device          TEXT NOT NULL,
  tag             TEXT NOT NULL,
  command         TEXT NOT NULL,
  status          TEXT NOT NULL
                  CHECK (status IN (@STATUSES@)),
  message         TEXT NOT NULL,
  config_json     TEXT NOT NULL,
  environment_id  INTEGER NOT NULL REFERENCES environments(id),)sql";

// The columns every pass table (profiles, memory_profiles) starts with: the group of passes
// of one call, when, what ran where, how it ended (detail::pass_row writes them).
constexpr const char* kPassColumnsSql = R"sql(  id              INTEGER PRIMARY KEY AUTOINCREMENT,
  group_id        TEXT NOT NULL,
  started_at      TEXT NOT NULL,
@RECORD_COLUMNS@)sql";

// Version 2: operator profiles. One `profiles` row per profiling pass (one thread count);
// passes of one `plumb profile --threads 1,2,...` call share a group id. op_stats holds the
// aggregated operator rows, per step.
constexpr const char* kProfilesSql = R"sql(
CREATE TABLE profiles (
@PASS_COLUMNS@
  steps           INTEGER NOT NULL,
  step_s          REAL,
  op_self_s       REAL,
  overhead_s      REAL,
  cpu_utilization REAL,
  units_per_step  REAL,
  throughput_unit TEXT NOT NULL,
  steady_detected INTEGER NOT NULL,
  warmup_json     TEXT NOT NULL,
  profiled_json   TEXT NOT NULL,
  warnings_json   TEXT NOT NULL
);
CREATE INDEX profiles_by_workload ON profiles (workload, mode);

CREATE TABLE op_stats (
  profile_id    INTEGER NOT NULL REFERENCES profiles(id) ON DELETE CASCADE,
  name          TEXT NOT NULL,
  scope         TEXT NOT NULL CHECK (scope IN ('forward', 'backward')),
  layer         TEXT NOT NULL,
  category      TEXT NOT NULL,
  kind          TEXT NOT NULL CHECK (kind IN ('costed', 'uncosted', 'composite')),
  signature     TEXT NOT NULL,
  calls         REAL NOT NULL,
  self_s        REAL NOT NULL,
  inclusive_s   REAL NOT NULL,
  flops         REAL NOT NULL,
  macs          REAL NOT NULL,
  bytes_read    REAL NOT NULL,
  bytes_written REAL NOT NULL
);
CREATE INDEX op_stats_by_profile ON op_stats (profile_id);
)sql";

// Version 3: machine ceilings from `plumb probe`. The probe is one document (peaks per dtype,
// bandwidth per memory level, the curves behind them), kept whole as JSON; `machine` says
// which machine it describes so later commands reuse only a probe of the machine they run on.
constexpr const char* kProbesSql = R"sql(
CREATE TABLE probes (
  id             INTEGER PRIMARY KEY AUTOINCREMENT,
  machine        TEXT NOT NULL,
  mode           TEXT NOT NULL CHECK (mode IN ('quick', 'thorough')),
  measured_at    TEXT NOT NULL,
  seconds        REAL NOT NULL,
  environment_id INTEGER NOT NULL REFERENCES environments(id),
  json           TEXT NOT NULL
);
CREATE INDEX probes_by_machine ON probes (machine, id);
)sql";

// Version 4: memory-profiling passes (`plumb memory`), one row per workload, mode and batch.
// Per-category peaks are columns for querying; the breakdown (mix at the peak, timeline,
// layers, largest allocations) is kept whole as JSON.
constexpr const char* kMemorySql = R"sql(
CREATE TABLE memory_profiles (
@PASS_COLUMNS@
  weights         INTEGER,
  gradients       INTEGER,
  optimizer_state INTEGER,
  feature_maps    INTEGER,
  workspace       INTEGER,
  input           INTEGER,
  other           INTEGER,
  total_peak      INTEGER,
  tracked_peak    INTEGER,
  rss_peak_growth INTEGER,
  limit_bytes     INTEGER NOT NULL,
  step_s          REAL,
  units_per_step  REAL,
  throughput_unit TEXT NOT NULL,
  warnings_json   TEXT NOT NULL,
  breakdown_json  TEXT NOT NULL
);
CREATE INDEX memory_profiles_by_group ON memory_profiles (group_id, id);
)sql";

// Version 5: sweeps (`plumb sweep`). A sweep is identified by its canonical spec; each point
// is stored once (UNIQUE), in the same transaction as the run (and memory pass) behind it, so
// a sweep killed mid-way resumes without losing or repeating a point.
constexpr const char* kSweepsSql = R"sql(
CREATE TABLE sweeps (
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  name       TEXT NOT NULL UNIQUE,
  workload   TEXT NOT NULL,
  spec_json  TEXT NOT NULL,
  created_at TEXT NOT NULL,
  points     INTEGER NOT NULL
);
CREATE TABLE sweep_points (
  id           INTEGER PRIMARY KEY AUTOINCREMENT,
  sweep_id     INTEGER NOT NULL REFERENCES sweeps(id),
  point_index  INTEGER NOT NULL,
  point_key    TEXT NOT NULL,
  mode         TEXT NOT NULL CHECK (mode IN ('train', 'infer')),
  params_json  TEXT NOT NULL,
  status       TEXT NOT NULL
               CHECK (status IN (@POINT_STATUSES@)),
  message      TEXT NOT NULL,
  run_id       INTEGER REFERENCES runs(id),
  memory_id    INTEGER REFERENCES memory_profiles(id),
  profile_id   INTEGER REFERENCES profiles(id),
  metrics_json TEXT NOT NULL,
  warmup_s     REAL NOT NULL,
  measure_s    REAL NOT NULL,
  wall_s       REAL NOT NULL,
  shard        TEXT NOT NULL,
  finished_at  TEXT NOT NULL,
  UNIQUE (sweep_id, point_key)
);
)sql";

// Version 7: what `plumb precision` found per precision against its fp32 reference run. NULL
// is undefined (no error measured, an agreement that does not apply).
constexpr const char* kPrecisionSql = R"sql(
CREATE TABLE IF NOT EXISTS precision_comparisons (
  id               INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id           INTEGER NOT NULL REFERENCES runs(id),
  reference_run_id INTEGER NOT NULL REFERENCES runs(id),
  speedup          REAL,
  speedup_low      REAL,
  speedup_high     REAL,
  error_measured   INTEGER NOT NULL,
  relative_l2      REAL,
  max_abs          REAL,
  cosine           REAL,
  agreement        REAL,
  agreement_kind   TEXT NOT NULL,
  elements         INTEGER NOT NULL,
  examples         INTEGER NOT NULL,
  note             TEXT NOT NULL
);
)sql";

// Version 14: precisions a quick characterization left untimed, one row per item (the newest
// decision replaces an older one).
constexpr const char* kUntimedSql = R"sql(
CREATE TABLE IF NOT EXISTS untimed_precisions (
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  tag        TEXT NOT NULL,
  workload   TEXT NOT NULL,
  mode       TEXT NOT NULL,
  dtype      TEXT NOT NULL,
  reason     TEXT NOT NULL,
  command    TEXT NOT NULL,
  decided_at TEXT NOT NULL,
  UNIQUE (tag, workload, mode, dtype)
);
)sql";

// Schema v9: the data-flow graph captured with a profile (compact JSON, profile/op_graph.h; no
// row: the profile was stored before graph capture existed), and fused-kernel checks (plumb
// analyze fusion: a fused kernel timed against its unfused sequence on recorded shapes).
constexpr const char* kFusionSql = R"sql(
CREATE TABLE IF NOT EXISTS profile_graphs (
  profile_id INTEGER PRIMARY KEY REFERENCES profiles(id),
  nodes      INTEGER NOT NULL,
  json       TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS fused_kernel_checks (
  id             INTEGER PRIMARY KEY AUTOINCREMENT,
  measured_at    TEXT NOT NULL,
  machine        TEXT NOT NULL,
  kind           TEXT NOT NULL,
  shapes         TEXT NOT NULL,
  unfused        TEXT NOT NULL,
  fused_op       TEXT NOT NULL,
  dtype          TEXT NOT NULL,
  threads        INTEGER NOT NULL,
  repetitions    INTEGER NOT NULL,
  unfused_s      REAL NOT NULL,
  fused_s        REAL NOT NULL,
  max_abs_diff   REAL,
  graph_json     TEXT NOT NULL,
  environment_id INTEGER NOT NULL REFERENCES environments(id)
);
CREATE INDEX IF NOT EXISTS fused_kernel_checks_by_shape
  ON fused_kernel_checks (machine, kind, shapes, threads);
)sql";

// plumb dist: one row per world (a worker count) of a data-parallel measurement (schema v8).
// Its figures as columns for SQL; the whole result (per-step samples, buckets, the all-reduce
// sweep) as JSON.
constexpr const char* kDistSql = R"sql(
CREATE TABLE IF NOT EXISTS dist_worlds (
  id                 INTEGER PRIMARY KEY AUTOINCREMENT,
  started_at         TEXT NOT NULL,
  workload           TEXT NOT NULL,
  workers            INTEGER NOT NULL,
  threads_per_worker INTEGER NOT NULL,
  batch_per_worker   INTEGER NOT NULL,
  bucket_bytes       INTEGER NOT NULL,
  overlap            INTEGER NOT NULL,
  link               TEXT NOT NULL,
  tag                TEXT NOT NULL,
  status             TEXT NOT NULL CHECK (status IN (@STATUSES@)),
  message            TEXT NOT NULL,
  throughput         REAL,
  throughput_unit    TEXT NOT NULL,
  step_mean_s        REAL,
  step_ci_rel        REAL,
  efficiency         REAL,
  compute_s          REAL,
  exposed_s          REAL,
  overlapped_s       REAL,
  gradient_bytes     INTEGER NOT NULL,
  peak_rss_bytes     INTEGER NOT NULL,
  environment_id     INTEGER NOT NULL REFERENCES environments(id),
  json               TEXT NOT NULL
);
)sql";

// plumb serve (schema v10): a session per invocation, a measurement per scenario served (its
// summary as columns), and every query's times (seconds from the measurement's start).
constexpr const char* kServeSql = R"sql(
CREATE TABLE IF NOT EXISTS serve_sessions (
  id             INTEGER PRIMARY KEY AUTOINCREMENT,
  started_at     TEXT NOT NULL,
  workload       TEXT NOT NULL,
  scenario       TEXT NOT NULL,
  dtype          TEXT NOT NULL,
  setting        TEXT NOT NULL,
  threads        INTEGER NOT NULL,
  workers        INTEGER NOT NULL,
  bound_s        REAL NOT NULL,
  percentile     REAL NOT NULL,
  max_batch      INTEGER NOT NULL,
  max_wait_s     REAL NOT NULL,
  fixed_batch    INTEGER NOT NULL,
  searched       INTEGER NOT NULL,
  reachable      INTEGER NOT NULL,
  found_qps      REAL,
  failed_qps     REAL,
  status         TEXT NOT NULL CHECK (status IN (@STATUSES@)),
  message        TEXT NOT NULL,
  tag            TEXT NOT NULL,
  command        TEXT NOT NULL,
  environment_id INTEGER NOT NULL REFERENCES environments(id),
  json           TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS serve_measurements (
  id             INTEGER PRIMARY KEY AUTOINCREMENT,
  session_id     INTEGER NOT NULL REFERENCES serve_sessions(id),
  role           TEXT NOT NULL,
  offered_qps    REAL,
  achieved_qps   REAL,
  queries        INTEGER NOT NULL,
  over_bound     INTEGER NOT NULL,
  largest_batch  INTEGER NOT NULL,
  tail_s         REAL,
  tail_low_s     REAL,
  tail_high_s    REAL,
  p50_s          REAL,
  p90_s          REAL,
  p99_s          REAL,
  p999_s         REAL,
  verdict        TEXT NOT NULL,
  queueing_share REAL,
  mean_batch     REAL
);
CREATE INDEX IF NOT EXISTS serve_measurements_by_session ON serve_measurements (session_id);
CREATE TABLE IF NOT EXISTS serve_queries (
  measurement_id INTEGER NOT NULL REFERENCES serve_measurements(id),
  arrival_s      REAL NOT NULL,
  start_s        REAL NOT NULL,
  finish_s       REAL NOT NULL,
  batch          INTEGER NOT NULL,
  worker         INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS serve_queries_by_measurement ON serve_queries (measurement_id);
)sql";

// v11: one row per `plumb tune` call; the stock and best configurations' steady-state runs are
// ordinary runs (run ids in the document), and the whole report is kept as its JSON.
constexpr const char* kTuneSql = R"sql(
CREATE TABLE IF NOT EXISTS tune_sessions (
  id             INTEGER PRIMARY KEY AUTOINCREMENT,
  started_at     TEXT NOT NULL,
  workload       TEXT NOT NULL,
  mode           TEXT NOT NULL,
  batch          INTEGER NOT NULL,
  threads        INTEGER NOT NULL,
  found          INTEGER NOT NULL,
  speedup        REAL,
  speedup_low    REAL,
  speedup_high   REAL,
  best_command   TEXT NOT NULL,
  tag            TEXT NOT NULL,
  environment_id INTEGER NOT NULL REFERENCES environments(id),
  json           TEXT NOT NULL
);
)sql";

// Every SQLite 3 file starts with these 16 bytes. Checked before SQLite sees the file, so a
// file that is plainly something else is refused with a clear message without being handed
// to SQLite at all (which would only report SQLITE_NOTADB on first read).
constexpr std::array<char, 16> kSqliteMagic = {'S', 'Q', 'L', 'i', 't', 'e', ' ', 'f',
                                               'o', 'r', 'm', 'a', 't', ' ', '3', '\0'};

// Refuses, before SQLite opens anything for writing, a path whose file or directory cannot
// be written: otherwise the failure would surface only when the first run is saved, after
// minutes of benchmarking. The directory matters too: WAL keeps '-wal' and '-shm' files next
// to the database.
void require_writable(const std::string& path, bool file_exists) {
  const std::string dir = directory_of(path);
  if (file_exists && ::access(path.c_str(), W_OK) != 0)
    throw UsageError(fmt::format(
        "cannot write results database '{}': {}; fix its permissions or pass another --db", path,
        std::strerror(errno)));
  if (::access(dir.c_str(), W_OK) != 0)
    throw UsageError(fmt::format(
        "cannot write in directory '{}' (for results database '{}'): {}; fix its permissions "
        "or pass another --db",
        dir, path, std::strerror(errno)));
}

bool has_sqlite_magic(const std::string& path, bool* readable) {
  std::ifstream in(path, std::ios::binary);
  *readable = static_cast<bool>(in);
  if (!in) return false;
  std::array<char, 16> head{};
  in.read(head.data(), head.size());
  return in.gcount() == static_cast<std::streamsize>(head.size()) && head == kSqliteMagic;
}

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

// "file:/abs/path?immutable=1", percent-encoding what a URI path may not hold literally.
std::string immutable_uri(const std::string& path) {
  const std::string abs = std::filesystem::absolute(path).string();
  std::string uri = "file:";
  for (unsigned char c : abs) {
    if (std::isalnum(c) || c == '/' || c == '-' || c == '_' || c == '.' || c == '~') {
      uri += static_cast<char>(c);
    } else {
      uri += fmt::format("%{:02X}", c);
    }
  }
  return uri + "?immutable=1";
}

bool has_side_files(const std::string& path) {
  std::error_code ec;
  for (const char* suffix : {"-wal", "-shm", "-journal"})
    if (std::filesystem::exists(path + suffix, ec)) return true;
  return false;
}

DbIdentity read_identity(SQLite::Database& db) {
  DbIdentity id;
  id.application_id = db.execAndGet("PRAGMA application_id").getInt();
  id.user_version = db.execAndGet("PRAGMA user_version").getInt();
  id.schema_objects = db.execAndGet("SELECT count(*) FROM sqlite_master").getInt64();
  return id;
}

DbKind classify(const DbIdentity& identity, const std::string& path) {
  if (identity.application_id == kApplicationId) {
    if (identity.user_version > kSchemaVersion)
      throw UsageError(fmt::format(
          "results database '{}' was created by a newer plumb (schema version {}, this build "
          "reads up to {}); upgrade plumb or use another --db",
          path, identity.user_version, kSchemaVersion));
    if (identity.user_version == kSchemaVersion) return DbKind::kPlumb;
    if (identity.user_version >= 1 && identity.schema_objects > 0) return DbKind::kOlder;
    if (identity.schema_objects == 0) return DbKind::kEmpty;
    throw UsageError(fmt::format(
        "results database '{}' carries plumb's id but an unknown schema version {}; it was "
        "not written by a released plumb, so it is left untouched: use another --db",
        path, identity.user_version));
  }
  if (identity.application_id == 0 && identity.schema_objects == 0) return DbKind::kEmpty;
  throw UsageError(fmt::format(
      "'{}' is an SQLite database that does not belong to plumb (application_id {:#x}, {} "
      "schema objects); plumb leaves it untouched: pass another --db",
      path, static_cast<uint32_t>(identity.application_id), identity.schema_objects));
}

DbKind probe_existing_file(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  bool readable = false;
  const bool magic = has_sqlite_magic(path, &readable);
  if (!readable)
    throw UsageError(
        fmt::format("cannot read results database '{}': permission denied or unreadable; fix its "
                    "permissions or pass another --db",
                    path));
  // A 0-byte file may still hold a database in an uncheckpointed '-wal' file next to it, so
  // it is probed through SQLite like any other.
  if (!ec && size > 0 && !magic)
    throw UsageError(
        fmt::format("'{}' is not an SQLite database (not a plumb results store); plumb leaves it "
                    "untouched: pass another --db",
                    path));
  try {
    // Even a read-only connection to a WAL database creates '-wal' and '-shm' files, which a
    // refusal must not leave behind. With no side files present no other connection is
    // writing, so the file can be read as immutable (no locks, no side files). Otherwise
    // they exist already and a normal read-only connection sees what the WAL holds.
    SQLite::Database probe =
        has_side_files(path)
            ? SQLite::Database(path, SQLite::OPEN_READONLY, kBusyTimeoutMs)
            : SQLite::Database(immutable_uri(path), SQLite::OPEN_READONLY | SQLite::OPEN_URI);
    return classify(read_identity(probe), path);
  } catch (const SQLite::Exception& e) {
    const int code = e.getErrorCode();
    if (code == SQLITE_NOTADB || code == SQLITE_CORRUPT)
      throw UsageError(fmt::format(
          "'{}' is not a valid SQLite database ({}); plumb leaves it untouched: pass another "
          "--db",
          path, e.what()));
    throw UsageError(fmt::format(
        "cannot read results database '{}': {}; check the file and its permissions or pass "
        "another --db",
        path, e.what()));
  }
}

std::string directory_of(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

UsageError no_results_yet(const std::string& path) {
  return UsageError(fmt::format(
      "'{}' holds no plumb results yet; run a benchmark first (plumb run ... --db {}) or pass "
      "the right --db",
      path, path));
}

// What is at `path` before anything is opened: nothing, or a file SQLite may be pointed at.
// Returns nullopt when the file does not exist (and may be created).
std::optional<DbKind> check_path(const std::string& path, bool read_only) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory)
    throw UsageError(
        fmt::format("cannot access results database '{}': {}; check the path or pass another --db",
                    path, ec.message()));
  if (!fs::exists(st)) {
    if (read_only)
      throw UsageError(fmt::format(
          "no results database at '{}'; run a benchmark first (plumb run ... --db {}) or pass "
          "the right --db",
          path, path));
    const std::string dir = directory_of(path);
    if (!fs::exists(dir, ec))
      throw UsageError(fmt::format(
          "cannot create results database '{}': directory '{}' does not exist; create it "
          "(mkdir -p {}) or pass another --db",
          path, dir, dir));
    if (!fs::is_directory(dir, ec))
      throw UsageError(fmt::format(
          "cannot create results database '{}': '{}' is not a directory; pass another --db", path,
          dir));
    require_writable(path, false);
    return std::nullopt;
  }
  if (fs::is_directory(st))
    throw UsageError(fmt::format(
        "'{}' is a directory, not a results database; pass a file path such as {}/plumb.db "
        "with --db",
        path, path));
  if (!fs::is_regular_file(st))
    throw UsageError(fmt::format(
        "'{}' is not a regular file, so it cannot hold a results database; pass another --db",
        path));
  if (!read_only) require_writable(path, true);
  const DbKind kind = probe_existing_file(path);
  if (read_only && kind == DbKind::kEmpty) throw no_results_yet(path);
  return kind;
}

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
  db.exec(fmt::format("PRAGMA user_version = {}", kSchemaVersion));
}

bool has_table(SQLite::Database& db, const std::string& table) {
  SQLite::Statement q(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?");
  q.bind(1, table);
  q.executeStep();
  return q.getColumn(0).getInt() > 0;
}

bool has_column(SQLite::Database& db, const std::string& table, const std::string& column) {
  SQLite::Statement q(db, "SELECT count(*) FROM pragma_table_info(?) WHERE name = ?");
  q.bind(1, table);
  q.bind(2, column);
  q.executeStep();
  return q.getColumn(0).getInt() > 0;
}

}  // namespace plumb::store::detail
