-- plumb results store, schema v5: what create_schema ran at commit fcf2b2b, as changes to v4.sql
-- (written by tests/store_schemas/derive_from_history.py)
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
               CHECK (status IN ('ok', 'nan_loss', 'out_of_memory', 'error', 'timeout')),
  message      TEXT NOT NULL,
  run_id       INTEGER REFERENCES runs(id),
  memory_id    INTEGER REFERENCES memory_profiles(id),
  metrics_json TEXT NOT NULL,
  warmup_s     REAL NOT NULL,
  measure_s    REAL NOT NULL,
  wall_s       REAL NOT NULL,
  shard        TEXT NOT NULL,
  finished_at  TEXT NOT NULL,
  UNIQUE (sweep_id, point_key)
);
PRAGMA user_version = 5;
