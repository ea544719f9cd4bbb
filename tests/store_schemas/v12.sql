-- plumb results store, schema v12: what create_schema ran at commit fdcb6c8
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
CREATE INDEX runs_by_workload ON runs (workload, mode);

CREATE TABLE samples (
  run_id  INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  phase   TEXT NOT NULL CHECK (phase IN ('warmup', 'measure')),
  idx     INTEGER NOT NULL,
  seconds REAL NOT NULL,
  PRIMARY KEY (run_id, phase, idx)
) WITHOUT ROWID;
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
CREATE INDEX memory_profiles_by_group ON memory_profiles (group_id, id);
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
ALTER TABLE runs ADD COLUMN engine TEXT NOT NULL DEFAULT 'onednn';
ALTER TABLE runs ADD COLUMN heap TEXT NOT NULL DEFAULT 'keep';
ALTER TABLE profiles ADD COLUMN engine TEXT NOT NULL DEFAULT 'onednn';
ALTER TABLE profiles ADD COLUMN heap TEXT NOT NULL DEFAULT 'keep';
ALTER TABLE memory_profiles ADD COLUMN engine TEXT NOT NULL DEFAULT 'onednn';
ALTER TABLE memory_profiles ADD COLUMN heap TEXT NOT NULL DEFAULT 'keep';
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
ALTER TABLE runs ADD COLUMN injected_delay_ms REAL NOT NULL DEFAULT 0;
PRAGMA application_id = 1347177794;
PRAGMA user_version = 12;
