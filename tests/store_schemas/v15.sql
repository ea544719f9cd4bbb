-- plumb results store, schema v15: what create_schema ran at commit 48f4e17, as changes to v14.sql
-- (written by tests/store_schemas/derive_from_history.py)
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
PRAGMA user_version = 15;
