-- plumb results store, schema v14: what create_schema ran at commit 7da1664, as changes to v13.sql
-- (written by tests/store_schemas/derive_from_history.py)
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
PRAGMA user_version = 14;
