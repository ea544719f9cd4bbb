"""How much a plumb run's step time depends on where its tensors land on the heap, with and
without plumb's malloc settings (run/heap_policy.h).

The same `plumb run` is repeated with its results database at paths of different lengths,
each a fresh copy of one database that already holds earlier runs. SQLite reads that database
and allocates path-sized buffers before the run, so each path leaves the heap in a different
state when the model's tensors are first allocated: a different heap layout, with nothing else
changed. Every layout is run twice, interleaved: plumb as it is, then with
PLUMB_MALLOC_DEFAULTS=1 (glibc's adaptive thresholds, as in any other LibTorch program).

For each it prints the median step time and the minor page faults per step beyond the fewest
any run of the sweep took (start-up costs the same in every run, so this is what the steps
themselves fault: pages the heap gave back and took again).

Usage: /usr/bin/python3 bench/heap_layout.py [--plumb build/plumb] [--layouts 16]
       [--run "autoenc --mode infer --batch 100 --threads 2"]
"""
import argparse
import json
import os
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
parser = argparse.ArgumentParser()
parser.add_argument("--plumb", default=os.path.join(HERE, "..", "build", "plumb"))
parser.add_argument("--layouts", type=int, default=16)
parser.add_argument("--run", default="autoenc --mode infer --batch 100 --threads 2")
parser.add_argument("--min-samples", type=int, default=300)
args = parser.parse_args()

tmp = tempfile.mkdtemp(prefix="plumb_heap_")
seed_db = os.path.join(tmp, "history.db")
# A database with history, as a user's plumb.db has: a few short runs of other shapes.
for history in ["autoenc --mode train --batch 64", "autoenc --mode infer --batch 32",
                "seq2seq --mode infer --batch 4", "autoenc --mode train --batch 100"] * 2:
    subprocess.run([args.plumb, "run", *shlex.split(history), "--threads", "1", "--max-time",
                    "0.3", "--max-warmup-time", "1", "--db", seed_db],
                   check=True, capture_output=True)


def run_once(db, malloc_defaults):
    env = dict(os.environ)
    env.pop("PLUMB_MALLOC_DEFAULTS", None)
    if malloc_defaults:
        env["PLUMB_MALLOC_DEFAULTS"] = "1"
    shutil.copy(seed_db, db)
    faults_before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt
    out = subprocess.run([args.plumb, "run", *shlex.split(args.run), "--max-time", "5",
                          "--min-samples", str(args.min_samples), "--db", db, "--json"],
                         env=env, check=True, capture_output=True, text=True).stdout
    faults = resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt - faults_before
    j = json.loads(out)
    if j["status"] != "ok":
        sys.exit(f"plumb run failed: {j['message']}")
    os.remove(db)
    steps = j["warmup_iterations"] + j["step_time"]["n"]
    return {"median_ms": 1e3 * j["step_time"]["median"], "faults": faults, "steps": steps}


rows = []
for k in range(args.layouts):
    db = os.path.join(tmp, "run" + "q" * k + ".db")
    rows.append({"layout": k, "plumb": run_once(db, False), "glibc": run_once(db, True)})
    print(f"layout {k:2d} done", file=sys.stderr, flush=True)

fewest = min(min(r["plumb"]["faults"], r["glibc"]["faults"]) for r in rows)


def extra_faults(m):
    return (m["faults"] - fewest) / m["steps"]


print(f"plumb run {args.run}: {args.layouts} heap layouts, median step time (ms) and extra "
      "minor page faults per step")
print("| layout | plumb's malloc settings | faults/step | glibc defaults | faults/step |")
print("|---|---|---|---|---|")
for r in rows:
    p, g = r["plumb"], r["glibc"]
    print(f"| {r['layout']} | {p['median_ms']:.3f} | {extra_faults(p):.0f} | "
          f"{g['median_ms']:.3f} | {extra_faults(g):.0f} |")
for side, name in [("plumb", "plumb's malloc settings"), ("glibc", "glibc defaults")]:
    medians = [r[side]["median_ms"] for r in rows]
    fastest = min(medians)
    slow = sum(1 for m in medians if m > 1.1 * fastest)
    faulting = sum(1 for r in rows if extra_faults(r[side]) >= 10)
    print(f"{name}: median {statistics.median(medians):.3f} ms, range {fastest:.3f}.."
          f"{max(medians):.3f} ms; {slow} of {len(rows)} layouts >10% slower than the fastest; "
          f"{faulting} of {len(rows)} fault >= 10 pages per step")
shutil.rmtree(tmp)
