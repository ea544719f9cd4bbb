-- plumb results store, schema v6: what create_schema ran at commit a45811c, as changes to v5.sql
-- (written by tests/store_schemas/derive_from_history.py)
PRAGMA user_version = 6;
