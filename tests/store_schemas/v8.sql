-- plumb results store, schema v8: what create_schema ran at commit 9839854, as changes to v7.sql
-- (written by tests/store_schemas/derive_from_history.py)
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
  status             TEXT NOT NULL CHECK (status IN ('ok', 'nan_loss', 'out_of_memory', 'error', 'unsupported')),
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
PRAGMA user_version = 8;
