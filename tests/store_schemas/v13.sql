-- plumb results store, schema v13: what create_schema ran at commit 3936cb5, as changes to v12.sql
-- (written by tests/store_schemas/derive_from_history.py)
ALTER TABLE profiles ADD COLUMN learning_step_s REAL;
ALTER TABLE profiles ADD COLUMN replayed_steps INTEGER;
PRAGMA user_version = 13;
