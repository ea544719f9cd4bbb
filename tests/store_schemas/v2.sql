-- plumb results store, schema v2: what create_schema ran at commit 9976c19, as changes to v1.sql
-- (written by tests/store_schemas/derive_from_history.py)
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
                  CHECK (status IN ('ok', 'nan_loss', 'out_of_memory', 'error')),
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
PRAGMA user_version = 2;
