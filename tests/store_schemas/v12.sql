-- plumb results store, schema v12: what create_schema ran at commit fdcb6c8, as changes to v11.sql
-- (written by tests/store_schemas/derive_from_history.py)
CREATE TABLE runs (
  id                INTEGER PRIMARY KEY AUTOINCREMENT,
  started_at        TEXT NOT NULL,
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
ALTER TABLE runs ADD COLUMN injected_delay_ms REAL NOT NULL DEFAULT 0;
PRAGMA user_version = 12;
