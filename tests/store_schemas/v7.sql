-- plumb results store, schema v7: what create_schema ran at commit 1764a0d, as changes to v6.sql
-- (written by tests/store_schemas/derive_from_history.py)
CREATE TABLE runs (
  id                INTEGER PRIMARY KEY AUTOINCREMENT,
  started_at        TEXT NOT NULL,
  workload          TEXT NOT NULL,
  mode              TEXT NOT NULL CHECK (mode IN ('train', 'infer')),
  batch             INTEGER NOT NULL,
  threads           INTEGER NOT NULL,
  device            TEXT NOT NULL,
  tag               TEXT NOT NULL,
  command           TEXT NOT NULL,
  status            TEXT NOT NULL
                    CHECK (status IN ('ok', 'nan_loss', 'out_of_memory', 'error', 'unsupported')),
  message           TEXT NOT NULL,
  config_json       TEXT NOT NULL,
  environment_id    INTEGER NOT NULL REFERENCES environments(id),
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
CREATE TABLE profiles (
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
                  CHECK (status IN ('ok', 'nan_loss', 'out_of_memory', 'error', 'unsupported')),
  message         TEXT NOT NULL,
  config_json     TEXT NOT NULL,
  environment_id  INTEGER NOT NULL REFERENCES environments(id),
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
                  CHECK (status IN ('ok', 'nan_loss', 'out_of_memory', 'error', 'unsupported')),
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
CREATE TABLE sweep_points (
  id           INTEGER PRIMARY KEY AUTOINCREMENT,
  sweep_id     INTEGER NOT NULL REFERENCES sweeps(id),
  point_index  INTEGER NOT NULL,
  point_key    TEXT NOT NULL,
  mode         TEXT NOT NULL CHECK (mode IN ('train', 'infer')),
  params_json  TEXT NOT NULL,
  status       TEXT NOT NULL
               CHECK (status IN ('ok', 'nan_loss', 'out_of_memory', 'error', 'unsupported', 'timeout')),
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
ALTER TABLE runs ADD COLUMN dtype TEXT NOT NULL DEFAULT 'fp32';
ALTER TABLE runs ADD COLUMN memory_format TEXT NOT NULL DEFAULT 'contiguous';
ALTER TABLE profiles ADD COLUMN dtype TEXT NOT NULL DEFAULT 'fp32';
ALTER TABLE profiles ADD COLUMN memory_format TEXT NOT NULL DEFAULT 'contiguous';
ALTER TABLE memory_profiles ADD COLUMN dtype TEXT NOT NULL DEFAULT 'fp32';
ALTER TABLE memory_profiles ADD COLUMN memory_format TEXT NOT NULL DEFAULT 'contiguous';
ALTER TABLE runs ADD COLUMN precision_json TEXT NOT NULL DEFAULT '[]';
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
PRAGMA user_version = 7;
