-- plumb results store, schema v9: what create_schema ran at commit 766df70, as changes to v8.sql
-- (written by tests/store_schemas/derive_from_history.py)
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
PRAGMA user_version = 9;
