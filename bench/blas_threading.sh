#!/usr/bin/env bash
# OpenBLAS's pthreads build vs its OpenMP build under plumb: throughput of a few workloads at
# 1 and 2 threads with each, alternating builds within every repetition so drift hits both.
# The pthreads build keeps its own thread pool beside LibTorch's OpenMP workers; this shows
# what that costs. Both builds must be installed (libopenblas0-pthread, libopenblas0-openmp);
# LD_LIBRARY_PATH selects one per run without touching the system's alternatives.
#
# Usage: bench/blas_threading.sh [PLUMB_BINARY] [REPETITIONS]
set -euo pipefail

plumb=${1:-build/plumb}
reps=${2:-2}
libdir=/usr/lib/$(gcc -print-multiarch)
db=$(mktemp -d)/blas.db
workloads=("autoenc --mode train --batch 64" "resnet50 --mode infer --batch 8" "seq2seq --mode infer --batch 8")

for build in pthread openmp; do
  [ -e "$libdir/openblas-$build/libopenblas.so.0" ] ||
    { echo "missing $libdir/openblas-$build: apt-get install libopenblas0-$build" >&2; exit 2; }
done
echo "OpenBLAS pthreads vs OpenMP build, $reps repetition(s), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-34s %7s %9s %14s\n' workload threads build throughput
for _ in $(seq 1 "$reps"); do
  for w in "${workloads[@]}"; do
    for threads in 1 2; do
      for build in pthread openmp; do
        json=$(LD_LIBRARY_PATH=$libdir/openblas-$build "$plumb" run $w --threads "$threads" \
          --max-time 6 --max-warmup-time 6 --db "$db" --json 2>/dev/null) ||
          { echo "plumb run $w --threads $threads failed with the $build build" >&2; exit 1; }
        printf '%-34s %7s %9s %14s\n' "$w" "$threads" "$build" \
          "$(jq -r '"\(.throughput | . * 10 | round / 10) \(.throughput_unit)"' <<<"$json")"
      done
    done
  done
done
