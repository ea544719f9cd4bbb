// The SQL of the results store's schema: the v1 tables, then each version's additions, with
// placeholders for the columns every record or pass table shares and for the status lists
// (schema_upgrades.cpp fills them). Internal to store/.
#pragma once

namespace plumb::store::detail {

// Summary statistics are columns (not JSON) so that ad-hoc SQL can filter and sort on them;
// NULL means undefined (NaN in memory). The full environment is kept as JSON as well, so a
// field added later needs no migration to be stored; its columns are for querying.
inline constexpr const char* kSchemaSql = R"sql(
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
@RECORD_COLUMNS@
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
)sql";

// What every record (run, profiling or memory pass) says was executed, where, and how it ended
// (detail::write_record_columns writes most of them).
inline constexpr const char* kRecordColumnsSql = R"sql(  workload        TEXT NOT NULL,
  mode            TEXT NOT NULL CHECK (mode IN ('train', 'infer')),
  batch           INTEGER NOT NULL,
  threads         INTEGER NOT NULL,
  device          TEXT NOT NULL,
  tag             TEXT NOT NULL,
  command         TEXT NOT NULL,
  status          TEXT NOT NULL
                  CHECK (status IN (@STATUSES@)),
  message         TEXT NOT NULL,
  config_json     TEXT NOT NULL,
  environment_id  INTEGER NOT NULL REFERENCES environments(id),)sql";

// The columns every pass table (profiles, memory_profiles) starts with: the group of passes
// of one call, when, what ran where, how it ended (detail::pass_row writes them).
inline constexpr const char* kPassColumnsSql =
    R"sql(  id              INTEGER PRIMARY KEY AUTOINCREMENT,
  group_id        TEXT NOT NULL,
  started_at      TEXT NOT NULL,
@RECORD_COLUMNS@)sql";

// Version 2: operator profiles. One `profiles` row per profiling pass (one thread count);
// passes of one `plumb profile --threads 1,2,...` call share a group id. op_stats holds the
// aggregated operator rows, per step.
inline constexpr const char* kProfilesSql = R"sql(
CREATE TABLE profiles (
@PASS_COLUMNS@
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
)sql";

// Version 3: machine ceilings from `plumb probe`. The probe is one document (peaks per dtype,
// bandwidth per memory level, the curves behind them), kept whole as JSON; `machine` says
// which machine it describes so later commands reuse only a probe of the machine they run on.
inline constexpr const char* kProbesSql = R"sql(
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
)sql";

// Version 4: memory-profiling passes (`plumb memory`), one row per workload, mode and batch.
// Per-category peaks are columns for querying; the breakdown (mix at the peak, timeline,
// layers, largest allocations) is kept whole as JSON.
inline constexpr const char* kMemorySql = R"sql(
CREATE TABLE memory_profiles (
@PASS_COLUMNS@
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
)sql";

// Version 5: sweeps (`plumb sweep`). A sweep is identified by its canonical spec; each point
// is stored once (UNIQUE), in the same transaction as the run (and memory pass) behind it, so
// a sweep killed mid-way resumes without losing or repeating a point.
inline constexpr const char* kSweepsSql = R"sql(
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
               CHECK (status IN (@POINT_STATUSES@)),
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
)sql";

// Version 7: what `plumb precision` found per precision against its fp32 reference run. NULL
// is undefined (no error measured, an agreement that does not apply).
inline constexpr const char* kPrecisionSql = R"sql(
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
)sql";

// Version 14: precisions a quick characterization left untimed, one row per item (the newest
// decision replaces an older one).
inline constexpr const char* kUntimedSql = R"sql(
CREATE TABLE IF NOT EXISTS untimed_precisions (
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  tag        TEXT NOT NULL,
  workload   TEXT NOT NULL,
  mode       TEXT NOT NULL,
  dtype      TEXT NOT NULL,
  reason     TEXT NOT NULL,
  command    TEXT NOT NULL,
  decided_at TEXT NOT NULL,
  UNIQUE (tag, workload, mode, dtype)
);
)sql";

// Version 15: the phases of a generative workload's inference run: its sizes and the bytes of
// its KV cache, and every measured prefill call (one per step: the time to first token) and
// decode call, in order (runs of other workloads have no row).
inline constexpr const char* kGenerationSql = R"sql(
CREATE TABLE IF NOT EXISTS run_generations (
  run_id         INTEGER PRIMARY KEY REFERENCES runs(id),
  batch          INTEGER NOT NULL,
  prompt         INTEGER NOT NULL,
  gen            INTEGER NOT NULL,
  kv_cache_bytes REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS generation_samples (
  run_id  INTEGER NOT NULL REFERENCES run_generations(run_id),
  phase   TEXT NOT NULL CHECK (phase IN ('prefill', 'decode')),
  idx     INTEGER NOT NULL,
  seconds REAL NOT NULL,
  PRIMARY KEY (run_id, phase, idx)
) WITHOUT ROWID;
)sql";

// Schema v9: the data-flow graph captured with a profile (compact JSON, profile/op_graph.h; no
// row: the profile was stored before graph capture existed), and fused-kernel checks (plumb
// analyze fusion: a fused kernel timed against its unfused sequence on recorded shapes).
inline constexpr const char* kFusionSql = R"sql(
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
)sql";

// plumb dist: one row per world (a worker count) of a data-parallel measurement (schema v8).
// Its figures as columns for SQL; the whole result (per-step samples, buckets, the all-reduce
// sweep) as JSON.
inline constexpr const char* kDistSql = R"sql(
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
  status             TEXT NOT NULL CHECK (status IN (@STATUSES@)),
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
)sql";

// plumb serve (schema v10): a session per invocation, a measurement per scenario served (its
// summary as columns), and every query's times (seconds from the measurement's start).
inline constexpr const char* kServeSql = R"sql(
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
  status         TEXT NOT NULL CHECK (status IN (@STATUSES@)),
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
)sql";

// v11: one row per `plumb tune` call; the stock and best configurations' steady-state runs are
// ordinary runs (run ids in the document), and the whole report is kept as its JSON.
inline constexpr const char* kTuneSql = R"sql(
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
)sql";

// Version 16: token-level serving (a generative workload served token by token). Each request
// of a measurement: when it arrived, got a slot, had its first token and completed (NULL: it
// never did), its prompt and output tokens, and the largest gap between its tokens (NULL for
// fewer than two); each engine iteration: what it ran and what the KV cache held when it ended.
// The session's and measurement's new columns are added by add_token_serve_columns.
inline constexpr const char* kTokenServeSql = R"sql(
CREATE TABLE IF NOT EXISTS serve_requests (
  measurement_id INTEGER NOT NULL REFERENCES serve_measurements(id),
  arrival_s      REAL NOT NULL,
  admitted_s     REAL,
  first_token_s  REAL,
  finish_s       REAL,
  prompt_tokens  INTEGER NOT NULL,
  output_tokens  INTEGER NOT NULL,
  max_itl_s      REAL
);
CREATE INDEX IF NOT EXISTS serve_requests_by_measurement ON serve_requests (measurement_id);
CREATE TABLE IF NOT EXISTS serve_iterations (
  measurement_id    INTEGER NOT NULL REFERENCES serve_measurements(id),
  start_s           REAL NOT NULL,
  end_s             REAL NOT NULL,
  decode_batch      INTEGER NOT NULL,
  prefill_tokens    INTEGER NOT NULL,
  running           INTEGER NOT NULL,
  waiting           INTEGER NOT NULL,
  kv_reserved_bytes INTEGER NOT NULL,
  kv_used_bytes     INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS serve_iterations_by_measurement ON serve_iterations (measurement_id);
)sql";

}  // namespace plumb::store::detail
