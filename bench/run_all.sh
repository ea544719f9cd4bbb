#!/usr/bin/env bash
# Runs every benchmark whose figures docs/benchmarks.md reports, one after another (they must
# not share the CPU), and writes their output to bench-results/ (or $1).
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-bench-results}"
mkdir -p "$out"
if [ -e "/usr/lib/$(gcc -print-multiarch)/openblas-pthread/libopenblas.so.0" ]; then
  bash bench/blas_threading.sh build/plumb 2 | tee "$out/blas_threading.txt"
else
  echo "skipped bench/blas_threading.sh: it needs libopenblas0-pthread beside the OpenMP build" |
    tee "$out/blas_threading.txt"
fi
bash bench/run_pytorch_compare.sh --rounds 5 | tee "$out/pytorch_compare.txt"
bash bench/compare_llm_pytorch.sh --rounds 3 | tee "$out/llm_pytorch_compare.txt"
/usr/bin/python3 bench/linear_gemv.py | tee "$out/linear_gemv.txt"
/usr/bin/python3 bench/heap_layout.py --layouts 32 | tee "$out/heap_layout.txt"
./build/bench/plumb_bench_observer_overhead resnet50 train 8 2 10 3 | tee "$out/observer_overhead.txt"
./build/bench/plumb_bench_observer_overhead seq2seq train 8 2 10 3 | tee -a "$out/observer_overhead.txt"
./build/bench/plumb_bench_observer_overhead seq2seq train 8 1 10 3 | tee -a "$out/observer_overhead.txt"
./build/bench/plumb_bench_gemm_crosscheck | tee "$out/gemm_crosscheck.txt"
/usr/bin/python3 bench/compare_profiler_flops.py --model resnet50 --mode infer | tee "$out/profiler_flops.txt"
/usr/bin/python3 bench/compare_profiler_flops.py --model resnet50 --mode train | tee -a "$out/profiler_flops.txt"
bash bench/compare_likwid.sh --mode thorough --repeat 3 | tee "$out/likwid_compare.txt"
db=$(mktemp -d)/probe.db
for mode in quick thorough; do
  /usr/bin/time -f "plumb probe --$mode: %e s wall" ./build/plumb probe --$mode --db "$db" 2>&1 |
    tail -1 | tee -a "$out/probe_time.txt"
done
