#!/usr/bin/env bash
# Writes the seed databases of the store_open fuzz target (tests/fuzz/corpus/store_open) with
# a built plumb: one of every record kind at the current schema, the same reduced to runs, an
# older schema, a foreign SQLite file and an empty file. Rerun after a schema change.
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
python3 - "$out" <<'PY'
import shutil, sqlite3, sys
out = sys.argv[1]
def finish(path, sql=""):
    # 512-byte pages keep the seeds small enough for libFuzzer to mutate quickly.
    c = sqlite3.connect(path); c.isolation_level = None
    c.executescript(sql)
    c.execute("PRAGMA journal_mode=DELETE"); c.execute("PRAGMA page_size=512"); c.execute("VACUUM")
    c.close()
    shutil.copy(path, f"{out}/{path}")
shutil.copy("full.db", "runs.db"); shutil.copy("full.db", "v4.db")
finish("full.db")
keep_runs = "".join(f"DELETE FROM {t};" for t in
    ["op_stats", "profile_graphs", "profiles", "memory_profiles", "sweep_points", "sweeps", "probes"])
finish("runs.db", keep_runs)
finish("v4.db", keep_runs + "DROP TABLE sweep_points; DROP TABLE sweeps; PRAGMA user_version=4;")
c = sqlite3.connect("foreign.db"); c.execute("CREATE TABLE runs(id INTEGER, note TEXT)")
c.execute("INSERT INTO runs VALUES (1, 'not plumb')"); c.commit(); c.close()
finish("foreign.db")
open(f"{out}/empty.db", "wb").close()
PY
ls -l "$out"
