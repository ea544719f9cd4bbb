#!/usr/bin/env bash
# Writes the seed databases of the store_open fuzz target (tests/fuzz/corpus/store_open) with
# a built plumb: runs, a profile, a memory pass, a sweep and a probe at the current schema, the
# same reduced to runs, those runs in a file of schema 4 as plumb created it then
# (tests/store_schemas/: v1.sql and the changes up to v4.sql), a foreign SQLite file and an empty
# file. Rerun after a schema change, first renaming full.db to full-v<its version>.db: the seeds
# of older versions stay.
# Usage: tests/fuzz/seed_store_corpus.sh [path/to/plumb]   (default: build/plumb)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
plumb="$(realpath "${1:-$here/../../build/plumb}")"
out="$here/corpus/store_open"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
small=(--set layers=2 --set nodes=32 --threads 1 --db full.db)
"$plumb" run paradnn_fc "${small[@]}" --batch 4 --max-time 0.5 --max-warmup-time 0.5 --tag seed
"$plumb" profile paradnn_fc "${small[@]}" --batch 4
"$plumb" memory paradnn_fc "${small[@]}" --batch 4
"$plumb" sweep paradnn_fc "${small[@]}" --grid batch=2,4 --max-time 0.3
"$plumb" probe --quick --db full.db
python3 - "$out" "$here/../store_schemas" <<'PY'
import shutil, sqlite3, sys
out = sys.argv[1]
sys.path.insert(0, sys.argv[2])
from derive_from_history import compose
v4_schema = "".join(statement + ";\n" for statement in compose("v4"))
def finish(path, sql=""):
    # 512-byte pages keep the seeds small enough for libFuzzer to mutate quickly.
    c = sqlite3.connect(path); c.isolation_level = None
    c.executescript(sql)
    c.execute("PRAGMA journal_mode=DELETE"); c.execute("PRAGMA page_size=512"); c.execute("VACUUM")
    c.close()
    shutil.copy(path, f"{out}/{path}")
shutil.copy("full.db", "runs.db")
finish("full.db")
keep_runs = "".join(f"DELETE FROM {t};" for t in
    ["op_stats", "profile_graphs", "profiles", "memory_profiles", "sweep_points", "sweeps", "probes"])
finish("runs.db", keep_runs)
# The runs again, in every column schema 4 had.
c = sqlite3.connect("v4.db"); c.isolation_level = None
c.executescript(v4_schema)
c.execute("ATTACH 'runs.db' AS today")
for (t,) in c.execute("SELECT name FROM main.sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").fetchall():
    cols = ", ".join(f'"{n}"' for (n,) in c.execute(
        "SELECT name FROM pragma_table_info(?1, 'main') WHERE name IN "
        "(SELECT name FROM pragma_table_info(?1, 'today'))", (t,)).fetchall())
    c.execute(f'INSERT INTO main."{t}" ({cols}) SELECT {cols} FROM today."{t}"')
c.execute("DETACH today"); c.close()
finish("v4.db")
c = sqlite3.connect("foreign.db"); c.execute("CREATE TABLE runs(id INTEGER, note TEXT)")
c.execute("INSERT INTO runs VALUES (1, 'not plumb')"); c.commit(); c.close()
finish("foreign.db")
open(f"{out}/empty.db", "wb").close()
PY
ls -l "$out"
