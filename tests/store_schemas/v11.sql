-- plumb results store, schema v11: what create_schema ran at commit 987d668, as changes to v10.sql
-- (written by tests/store_schemas/derive_from_history.py)
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
PRAGMA user_version = 11;
