#!/usr/bin/env bash
# plumb compare reliability (issue 8 target): on one machine, TRIALS times
#   1. two fresh runs of the same small workload, compared -> count "no significant difference"
#      (target: at least 19 of 20);
#   2. a fresh run, then a fresh run slowed by ~10% with the PLUMB_INJECT_STEP_DELAY_MS testing
#      aid (a busy-wait of 10% of the first run's mean step time inside every timed step),
#      compared -> count "slower" (target: at least 19 of 20).
# Every run is a new process, so process-to-process variation (memory layout, thread
# placement, frequency) is part of what is measured, as it is for a user.
#
# Usage: bench/compare_reliability.sh [PLUMB_BINARY] [TRIALS]
#   RUN_ARGS overrides the workload and its options; COMPARE_ARGS adds plumb compare options.
# Prints one line per trial and the two rates; keeps the databases in $OUT_DIR when set.
set -euo pipefail

plumb=${1:-build/plumb}
trials=${2:-20}
run_args=${RUN_ARGS:-"autoenc --mode train --batch 64 --threads 1 --max-time 3 --max-warmup-time 5 --target-ci 0.005"}
compare_args=${COMPARE_ARGS:-""}
out_dir=${OUT_DIR:-$(mktemp -d)}
mkdir -p "$out_dir"

# The verdict of the only row of `plumb compare --db DB 1 2` (exit 1 = slower is expected).
verdict() {
  "$plumb" compare --db "$1" 1 2 --json $compare_args | jq -r '.comparisons[0] | "\(.verdict) \(.ratio) [\(.ci_low), \(.ci_high)]"' || true
}

# Mean step time of run 1 in milliseconds.
mean_step_ms() {
  "$plumb" export --db "$1" | jq -r '.runs[0].step_time.mean * 1000'
}

echo "plumb compare reliability: $trials trials; run: plumb run $run_args; $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
same_ok=0
slow_ok=0
for i in $(seq 1 "$trials"); do
  same_db="$out_dir/same_$i.db"
  rm -f "$same_db"
  "$plumb" run $run_args --db "$same_db" >/dev/null 2>&1
  "$plumb" run $run_args --db "$same_db" >/dev/null 2>&1
  same=$(verdict "$same_db")
  [[ $same == "no significant difference"* ]] && same_ok=$((same_ok + 1))

  slow_db="$out_dir/slow_$i.db"
  rm -f "$slow_db"
  "$plumb" run $run_args --db "$slow_db" >/dev/null 2>&1
  delay_ms=$(mean_step_ms "$slow_db" | awk '{printf "%.4f", $1 * 0.10}')
  PLUMB_INJECT_STEP_DELAY_MS=$delay_ms "$plumb" run $run_args --db "$slow_db" >/dev/null 2>&1
  slow=$(verdict "$slow_db")
  [[ $slow == "slower"* ]] && slow_ok=$((slow_ok + 1))
  echo "trial $i: same -> $same | +${delay_ms} ms/step -> $slow"
done
echo "same workload twice: $same_ok/$trials no significant difference (target >= 19/20)"
echo "10% injected slowdown: $slow_ok/$trials slower (target >= 19/20)"
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg); databases in $out_dir"
