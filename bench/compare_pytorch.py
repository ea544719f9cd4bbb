"""plumb vs. plain PyTorch (Debian's python3-torch, the same LibTorch 1.13 engine underneath):
for each model and mode, alternate a `plumb run` and a PyTorch run of the same model at the
same batch, threads and mode, and report the plumb/PyTorch throughput ratio of the medians.

PyTorch is given exactly the warm-up and measured iteration counts that plumb's steady-state
runner chose in the preceding round, so both are timed over the same number of steps.
With --dtypes fp32,bf16,int8 (and --memory-format channels_last) each precision is compared
with PyTorch running the same precision its own way (pytorch_step.py says how).
Usage: /usr/bin/python3 bench/compare_pytorch.py [--plumb build/plumb] [--rounds 3]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

from bench_stats import fmt, geometric_interval

HERE = os.path.dirname(os.path.abspath(__file__))
# CPU-sized batches: large enough that a step is not dominated by per-op overhead, small enough
# that a round of every model finishes in minutes on 2 cores.
DEFAULT_BATCH = {"resnet50": 8, "autoenc": 100, "seq2seq": 8, "alexnet": 32, "vgg19": 4,
                 "residual": 8, "densenet121": 8, "squeezenet1_0": 16, "resnext101_32x4d": 4, "inception_v3": 4}

parser = argparse.ArgumentParser()
parser.add_argument("--plumb", default=os.path.join(HERE, "..", "build", "plumb"))
parser.add_argument("--models", default=",".join(DEFAULT_BATCH))
parser.add_argument("--modes", default="train,infer")
parser.add_argument("--threads", type=int, default=2)
parser.add_argument("--rounds", type=int, default=3)
parser.add_argument("--max-time", type=float, default=30)
parser.add_argument("--max-warmup-time", type=float, default=30)
parser.add_argument("--min-samples", type=int, default=10,
                    help="plumb (and so PyTorch) measure at least this many steps")
parser.add_argument("--dtypes", default="fp32", help="comma-separated: fp32, bf16, int8")
parser.add_argument("--memory-format", default="contiguous", choices=["contiguous", "channels_last"])
parser.add_argument("--batch", type=int, default=0, help="one batch for every model (0: per model)")
args = parser.parse_args()
db = os.path.join(tempfile.mkdtemp(prefix="plumb_bench_"), "bench.db")


torch_env = dict(os.environ)


def run_plumb(model, mode, batch, dtype):
    out = subprocess.run([args.plumb, "run", model, "--mode", mode, "--batch", str(batch),
                          "--dtype", dtype, "--memory-format", args.memory_format,
                          "--threads", str(args.threads), "--max-time", str(args.max_time),
                          "--max-warmup-time", str(args.max_warmup_time),
                          "--min-samples", str(args.min_samples),
                          "--db", db, "--json"], check=True, capture_output=True, text=True).stdout
    j = json.loads(out)
    if j["status"] != "ok":
        sys.exit(f"plumb run failed: {j['message']}")
    # PyTorch loads the same OpenBLAS: give it the kernels plumb ran on (plumb replaces
    # OpenBLAS's generic fallback on a CPU it does not recognise; see docs/benchmarks.md).
    core = re.search(r"\(OpenBLAS kernels: ([A-Za-z0-9_]+)\)", j["environment"]["blas"])
    if core:
        torch_env["OPENBLAS_CORETYPE"] = core.group(1)
    return j["throughput"], j["warmup_iterations"], j["step_time"]["n"]


def run_pytorch(model, mode, batch, dtype, warmup, iters):
    out = subprocess.run([sys.executable, os.path.join(HERE, "pytorch_step.py"), "--model", model,
                          "--mode", mode, "--batch", str(batch), "--threads", str(args.threads),
                          "--dtype", dtype, "--memory-format", args.memory_format,
                          "--warmup", str(warmup), "--iters", str(iters)],
                         check=True, capture_output=True, text=True, env=torch_env).stdout
    return json.loads(out.strip().splitlines()[-1])


rows = []
print(f"plumb vs PyTorch, {args.rounds} alternating rounds, {args.threads} threads", flush=True)
for model in args.models.split(","):
    batch = args.batch or DEFAULT_BATCH[model]
    info = json.loads(subprocess.run([args.plumb, "info", model, "--json"], check=True,
                                     capture_output=True, text=True).stdout)
    for mode in args.modes.split(","):
        for dtype in args.dtypes.split(","):
            if dtype == "int8" and mode == "train":
                continue  # post-training quantization: inference only, on both sides
            plumb_tp, torch_tp, params_torch, unit = [], [], None, info["throughput_unit"]
            for r in range(args.rounds):
                # Alternate which goes first so drift in machine state hits both alike; round 0
                # starts with plumb, so PyTorch always has plumb's iteration counts to reuse.
                for who in (("plumb", "torch") if r % 2 == 0 else ("torch", "plumb")):
                    if who == "plumb":
                        tp, warmup, iters = run_plumb(model, mode, batch, dtype)
                        plumb_tp.append(tp)
                        continue
                    res = run_pytorch(model, mode, batch, dtype, warmup, iters)
                    torch_tp.append(res["throughput"])
                    params_torch = res["params"]
                    if res["unit"] != unit:
                        sys.exit(f"unit mismatch for {model}: {res['unit']} vs {unit}")
            # Each round's two runs are adjacent in time and share the machine's state, so the
            # per-round ratio cancels slow drift; report the median over rounds and the spread.
            ratios = [p / t for p, t in zip(plumb_tp, torch_tp)]
            ratio = statistics.median(ratios)
            geo, geo_low, geo_high = geometric_interval(ratios)
            row = dict(model=model, mode=mode, dtype=dtype, batch=batch, threads=args.threads,
                       unit=unit, geo=geo, geo_low=geo_low, geo_high=geo_high,
                       plumb=statistics.median(plumb_tp), pytorch=statistics.median(torch_tp),
                       ratio=ratio, ratio_min=min(ratios), ratio_max=max(ratios), plumb_runs=plumb_tp, pytorch_runs=torch_tp,
                       params_plumb=info["params"], params_pytorch=params_torch)
            rows.append(row)
            print(f"{model:9s} {mode:5s} {dtype:4s} batch {batch:3d}: plumb {row['plumb']:10.2f} {unit}, "
                  f"PyTorch {row['pytorch']:10.2f} {unit}, ratio {ratio:.3f} "
                  f"[{min(ratios):.3f}..{max(ratios):.3f}], geometric mean {geo:.3f} "
                  f"(95% CI {fmt(geo_low)}..{fmt(geo_high)}), params "
                  f"{info['params']} vs {params_torch}", flush=True)
            if params_torch is not None and dtype != "int8" and info["params"] != params_torch:
                sys.exit(f"parameter counts differ for {model}: the models are not the same")

print("\n| model | mode | dtype | batch | threads | plumb | PyTorch | unit | plumb/PyTorch (median) "
      "| per-round range | geometric mean (95% CI) |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for r in rows:
    print(f"| {r['model']} | {r['mode']} | {r['dtype']} | {r['batch']} | {r['threads']} | {r['plumb']:.2f} | "
          f"{r['pytorch']:.2f} | {r['unit']} | {r['ratio']:.3f} | {r['ratio_min']:.3f}..{r['ratio_max']:.3f} "
          f"| {r['geo']:.3f} ({fmt(r['geo_low'])}..{fmt(r['geo_high'])}) |")
worst = min(r["ratio"] for r in rows)
print(f"\nlowest ratio: {worst:.3f} ({'meets' if worst >= 1.0 else 'below'} the 1.0 target)")
# Rounds differ by several percent on a shared machine, so a median a little under 1 can be
# noise: say which rows' intervals lie wholly below 1 (plumb significantly slower).
slower = [f"{r['model']} {r['mode']} {r['dtype']}" for r in rows if r["geo_high"] is not None and r["geo_high"] < 1]
print("significantly slower than PyTorch (95% CI of the geometric mean below 1): "
      + (", ".join(slower) if slower else "none"))
