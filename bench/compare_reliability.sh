#!/usr/bin/env bash
# plumb compare reliability (issue 8 target): on one machine, TRIALS times
#   1. RUNS runs of side A and RUNS runs of side B of the same small workload, interleaved in
#      time (A B A B ...), compared -> count "no significant difference" (target: 19 of 20);
#   2. the same, with side B slowed by ~10% with the PLUMB_INJECT_STEP_DELAY_MS testing aid (a
#      busy-wait of 10% of A's first mean step time inside every timed step), compared ->
#      count "slower" (target: 19 of 20).
# Every run is a new process, so process-to-process variation (memory layout, thread
# placement, the machine's state over seconds) is part of what is measured, as it is for a
# user. With RUNS >= 2 plumb compare estimates that variation from the replicates
# (--all-runs); RUNS=1 compares single runs, whose interval covers only within-run noise.
#
# Usage: bench/compare_reliability.sh [PLUMB_BINARY] [TRIALS] [RUNS]
#   RUN_ARGS overrides the workload and its options; COMPARE_ARGS adds plumb compare options.
# Prints one line per trial and the two rates; keeps the databases in $OUT_DIR when set.
set -euo pipefail

plumb=${1:-build/plumb}
trials=${2:-20}
runs=${3:-3}
run_args=${RUN_ARGS:-"autoenc --mode train --batch 64 --threads 1 --max-time 3 --max-warmup-time 5 --target-ci 0.005"}
compare_args=${COMPARE_ARGS:-""}
out_dir=${OUT_DIR:-$(mktemp -d)}
mkdir -p "$out_dir"

# The verdict of the only row of `plumb compare` between tags a and b (exit 1 = slower is
# expected), with its interval, the run-to-run SD it used, and its resolution: the smallest
# change these runs call 19 times in 20, and the runs per side a 10% change needs.
verdict() {
  "$plumb" compare --db "$1" --tag a --tag b --all-runs --json $compare_args |
    jq -r '.comparisons[0] | "\(.verdict) \(.ratio) [\(.ci_low), \(.ci_high)] sd=\(.between_run_sd) dof=\(.between_run_dof) detectable=\(.detectable_change) runs_for_10pct=\(.runs_per_side_to_detect)"' || true
}

# Mean step time of the first run, in milliseconds.
mean_step_ms() {
  "$plumb" export --db "$1" | jq -r '.runs[0].step_time.mean * 1000'
}

# RUNS interleaved pairs into database $1; side B gets $2 ms of injected delay per step (0: none).
interleaved_runs() {
  local db=$1 delay_ms=$2
  for _ in $(seq 1 "$runs"); do
    "$plumb" run $run_args --db "$db" --tag a >/dev/null 2>&1
    if [[ $delay_ms == 0 ]]; then
      "$plumb" run $run_args --db "$db" --tag b >/dev/null 2>&1
    else
      PLUMB_INJECT_STEP_DELAY_MS=$delay_ms "$plumb" run $run_args --db "$db" --tag b >/dev/null 2>&1
    fi
  done
}

echo "plumb compare reliability: $trials trials, $runs run(s) per side; run: plumb run $run_args;" \
  "$(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
same_ok=0
slow_ok=0
for i in $(seq 1 "$trials"); do
  same_db="$out_dir/same_$i.db"
  rm -f "$same_db"
  interleaved_runs "$same_db" 0
  same=$(verdict "$same_db")
  [[ $same == "no significant difference"* ]] && same_ok=$((same_ok + 1))

  slow_db="$out_dir/slow_$i.db"
  rm -f "$slow_db"
  # The delay is 10% of a fresh run's mean step; that run is A's first replicate.
  "$plumb" run $run_args --db "$slow_db" --tag a >/dev/null 2>&1
  delay_ms=$(mean_step_ms "$slow_db" | awk '{printf "%.4f", $1 * 0.10}')
  PLUMB_INJECT_STEP_DELAY_MS=$delay_ms "$plumb" run $run_args --db "$slow_db" --tag b >/dev/null 2>&1
  runs_left=$((runs - 1))
  if ((runs_left > 0)); then runs=$runs_left interleaved_runs "$slow_db" "$delay_ms"; fi
  slow=$(verdict "$slow_db")
  [[ $slow == "slower"* ]] && slow_ok=$((slow_ok + 1))
  echo "trial $i: same -> $same | +${delay_ms} ms/step -> $slow"
done
echo "same workload twice: $same_ok/$trials no significant difference (target >= 19/20)"
echo "10% injected slowdown: $slow_ok/$trials slower (target >= 19/20)"
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg); databases in $out_dir"
