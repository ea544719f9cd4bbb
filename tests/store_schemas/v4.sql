-- plumb results store, schema v4: what create_schema ran at commit 1310b6c, as changes to v3.sql
-- (written by tests/store_schemas/derive_from_history.py)
CREATE TABLE memory_profiles (
  id              INTEGER PRIMARY KEY AUTOINCREMENT,
  group_id        TEXT NOT NULL,
  started_at      TEXT NOT NULL,
  workload        TEXT NOT NULL,
  mode            TEXT NOT NULL CHECK (mode IN ('train', 'infer')),
  batch           INTEGER NOT NULL,
  threads         INTEGER NOT NULL,
  device          TEXT NOT NULL,
  tag             TEXT NOT NULL,
  command         TEXT NOT NULL,
  status          TEXT NOT NULL
                  CHECK (status IN ('ok', 'nan_loss', 'out_of_memory', 'error')),
  message         TEXT NOT NULL,
  config_json     TEXT NOT NULL,
  environment_id  INTEGER NOT NULL REFERENCES environments(id),
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
PRAGMA user_version = 4;
