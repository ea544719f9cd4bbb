-- plumb results store, schema v1: what create_schema ran at commit fc81dcb
-- (written by tests/store_schemas/derive_from_history.py)
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
  workload          TEXT NOT NULL,
  mode              TEXT NOT NULL CHECK (mode IN ('train', 'infer')),
  batch             INTEGER NOT NULL,
  threads           INTEGER NOT NULL,
  device            TEXT NOT NULL,
  tag               TEXT NOT NULL,
  command           TEXT NOT NULL,
  status            TEXT NOT NULL
                    CHECK (status IN ('ok', 'nan_loss', 'out_of_memory', 'error')),
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
CREATE INDEX runs_by_workload ON runs (workload, mode);
CREATE TABLE samples (
  run_id  INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  phase   TEXT NOT NULL CHECK (phase IN ('warmup', 'measure')),
  idx     INTEGER NOT NULL,
  seconds REAL NOT NULL,
  PRIMARY KEY (run_id, phase, idx)
) WITHOUT ROWID;
PRAGMA application_id = 1347177794;
PRAGMA user_version = 1;
