-- plumb results store, schema v3: what create_schema ran at commit ea79033, as changes to v2.sql
-- (written by tests/store_schemas/derive_from_history.py)
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
PRAGMA user_version = 3;
