-- plumb results store, schema v10: what create_schema ran at commit 5ba9abb, as changes to v9.sql
-- (written by tests/store_schemas/derive_from_history.py)
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
  status         TEXT NOT NULL CHECK (status IN ('ok', 'nan_loss', 'out_of_memory', 'error', 'unsupported')),
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
PRAGMA user_version = 10;
