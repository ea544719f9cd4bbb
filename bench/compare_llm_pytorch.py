"""plumb vs PyTorch eager on GPT-2 generation with a KV cache (issue 44's target: plumb's prefill
and decode tokens/s each at least PyTorch's). Each round runs `plumb run gpt2 --mode infer` and
bench/pytorch_gpt2.py (the same architecture and sizes in Debian's python3-torch, on the same
LibTorch and OpenBLAS) one after the other, alternating which goes first; PyTorch is given the
warm-up and measured generation counts plumb's steady-state runner chose in that round. Prints
per phase the plumb/PyTorch ratio of tokens/s (median of the per-round ratios, their range, and
their geometric mean with a 95% interval), checks that both run the same model (parameters,
KV cache bytes, matrix FLOPs and bytes per token against `plumb info`), and gives each side's
effective decode bandwidth (bytes per token x decode tokens/s) against the probe's DRAM triad.
Usage: /usr/bin/python3 bench/compare_llm_pytorch.py [--preset small] [--prompt 128] [--gen 64]
       [--batch 1] [--threads 2] [--rounds 3]
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

parser = argparse.ArgumentParser()
parser.add_argument("--plumb", default=os.path.join(HERE, "..", "build", "plumb"))
parser.add_argument("--preset", default="small", choices=["small", "medium", "large", "xl"])
parser.add_argument("--prompt", type=int, default=128)
parser.add_argument("--gen", type=int, default=64)
parser.add_argument("--batch", type=int, default=1)
parser.add_argument("--threads", type=int, default=2)
parser.add_argument("--rounds", type=int, default=3)
parser.add_argument("--max-time", type=float, default=30, help="plumb's measurement budget, s")
parser.add_argument("--max-warmup-time", type=float, default=30)
parser.add_argument("--min-samples", type=int, default=5,
                    help="generations plumb (and so PyTorch) measure at least")
parser.add_argument("--warmup-window", type=int, default=2,
                    help="plumb's steady-state window, in generations (three are compared)")
parser.add_argument("--torch-gemv", action="store_true",
                    help="PyTorch runs a batch-1 decode's products as GEMV (torch.addmv), the "
                         "kernel plumb's decoder uses for a one-row product: the same kernels on "
                         "both sides; without it PyTorch runs them as nn.Linear does")
args = parser.parse_args()
if args.gen < 2:
    sys.exit("--gen must be at least 2: decode needs a second output token")
tmp = tempfile.mkdtemp(prefix="plumb_llm_bench_")
db = os.path.join(tmp, "bench.db")
sizes = f"preset={args.preset},prompt={args.prompt},gen={args.gen}"
torch_env = dict(os.environ)


def plumb_json(*argv):
    out = subprocess.run([args.plumb, *argv, "--json"], check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out)


def run_plumb():
    j = plumb_json("run", "gpt2", "--mode", "infer", "--set", sizes, "--batch", str(args.batch),
                   "--threads", str(args.threads), "--max-time", str(args.max_time),
                   "--max-warmup-time", str(args.max_warmup_time),
                   "--min-samples", str(args.min_samples),
                   "--warmup-window", str(args.warmup_window), "--db", db)
    if j["status"] != "ok":
        sys.exit(f"plumb run failed: {j['message']}")
    # PyTorch loads the same OpenBLAS: give it the kernels plumb ran on (as compare_pytorch.py).
    core = re.search(r"\(OpenBLAS kernels: ([A-Za-z0-9_]+)\)", j["environment"]["blas"])
    if core:
        torch_env["OPENBLAS_CORETYPE"] = core.group(1)
    g = j["generation"]
    return dict(prefill=g["prefill_tokens_per_s"], decode=g["decode_tokens_per_s"],
                kv_cache_bytes=g["kv_cache_bytes"], warmup=j["warmup_iterations"],
                iters=j["step_time"]["n"])


def run_pytorch(warmup, iters):
    out = subprocess.run([sys.executable, os.path.join(HERE, "pytorch_gpt2.py"),
                          "--preset", args.preset, "--prompt", str(args.prompt),
                          "--gen", str(args.gen), "--batch", str(args.batch),
                          "--threads", str(args.threads), "--warmup", str(warmup),
                          "--iters", str(iters)] + (["--gemv"] if args.torch_gemv else []),
                         check=True, capture_output=True, text=True, env=torch_env).stdout
    r = json.loads(out.strip().splitlines()[-1])
    # plumb's rates (run/generation_timing.cpp): batch x prompt / mean TTFT, and batch over the
    # mean of the per-generation mean decode calls.
    tpot = statistics.fmean(statistics.fmean(d) for d in r["decode_s"])
    r["prefill"] = args.batch * args.prompt / statistics.fmean(r["ttft_s"])
    r["decode"] = args.batch / tpot
    return r


def per_token(context):
    """plumb info's prefill and decode counts per token at `context` attended positions."""
    info = plumb_json("info", "gpt2", "--set", sizes, "--batch", str(args.batch),
                      "--context", str(context))
    rows = {row["phase"]: row for row in info["transformer"]["per_token"]}
    return info["params"], rows["prefill"], rows["decode"]


def dram_triad(probes=3):
    """The probe's DRAM triad (bytes/s) at the largest thread count measured not above ours:
    the median of `probes` quick probes, each in a fresh database (one quick probe on a VM can
    be far off: 80.8 GB/s once, against 43.7-49.2 GB/s in the three after it)."""
    triads = []
    for i in range(probes):
        probe = plumb_json("probe", "--quick", "--db", os.path.join(tmp, f"probe{i}.db"))
        levels = [lv for lv in probe["bandwidth"]["levels"]
                  if lv["level"] == "dram" and lv["threads"] <= args.threads]
        if levels:
            triads.append(max(levels, key=lambda lv: lv["threads"])["triad"])
    return statistics.median(triads) if triads else None


def relative_gap(a, b):
    return abs(a - b) / max(abs(b), 1e-30)


print(f"plumb vs PyTorch eager, gpt2 {args.preset}, prompt {args.prompt}, gen {args.gen}, "
      f"batch {args.batch}, {args.threads} threads, {args.rounds} alternating rounds", flush=True)
plumb_runs, torch_runs = [], []
for r in range(args.rounds):
    # Round 0 starts with plumb, so PyTorch always has plumb's generation counts to reuse.
    for who in (("plumb", "torch") if r % 2 == 0 else ("torch", "plumb")):
        if who == "plumb":
            plumb_runs.append(run_plumb())
            p = plumb_runs[-1]
            print(f"  round {r} plumb:   prefill {p['prefill']:9.1f} tokens/s, decode "
                  f"{p['decode']:7.2f} tokens/s ({p['warmup']} warm-up + {p['iters']} "
                  "generations)", flush=True)
        else:
            last = plumb_runs[-1]
            torch_runs.append(run_pytorch(last["warmup"], last["iters"]))
            t = torch_runs[-1]
            print(f"  round {r} PyTorch: prefill {t['prefill']:9.1f} tokens/s, decode "
                  f"{t['decode']:7.2f} tokens/s", flush=True)

# The same model: parameters and cache from both, matrix FLOPs and bytes per token from
# PyTorch's profiler and tensors against plumb's cost model.
t = torch_runs[-1]
params, prefill_row, decode_last = per_token(t["decode_context"])
checks = [("parameters", t["params"], params, 0),
          ("KV cache bytes", t["kv_cache_bytes"], plumb_runs[-1]["kv_cache_bytes"], 0),
          ("prefill matrix FLOPs/token", t["prefill_flops_per_token"], prefill_row["flops"], 1e-9),
          (f"decode matrix FLOPs/token (context {t['decode_context']})",
           t["decode_flops_per_token"], decode_last["flops"], 1e-9),
          # plumb counts one position-table row per request; the call reads one row in all.
          (f"decode bytes/token (context {t['decode_context']})", t["decode_bytes_per_token"],
           decode_last["bytes"], 1e-4)]
print("\nsame model:")
for name, torch_value, plumb_value, tolerance in checks:
    ok = relative_gap(torch_value, plumb_value) <= tolerance
    print(f"  {name}: PyTorch {torch_value:,.0f}, plumb {plumb_value:,.0f} "
          f"({'agree' if ok else 'DIFFER'})")
    if not ok:
        sys.exit(f"{name} differ: the two sides do not run the same model")

print("\n| phase | plumb tokens/s | PyTorch tokens/s | plumb/PyTorch (median) | per-round range "
      "| geometric mean (95% CI) |")
print("|---|---|---|---|---|---|")
worst = None
for phase in ("prefill", "decode"):
    ratios = [p[phase] / q[phase] for p, q in zip(plumb_runs, torch_runs)]
    geo, low, high = geometric_interval(ratios)
    median = statistics.median(ratios)
    worst = median if worst is None else min(worst, median)
    print(f"| {phase} | {statistics.median(p[phase] for p in plumb_runs):.2f} | "
          f"{statistics.median(q[phase] for q in torch_runs):.2f} | {median:.3f} | "
          f"{min(ratios):.3f}..{max(ratios):.3f} | {geo:.3f} ({fmt(low)}..{fmt(high)}) |")
print(f"\nlowest median ratio: {worst:.3f} ({'meets' if worst >= 1.0 else 'below'} the 1.0 target)")

# Effective decode bandwidth: a generation's decode calls attend prompt + 1 .. prompt + gen - 1
# positions, prompt + gen / 2 on average (as plumb analyze decode counts).
mean_context = args.prompt + args.gen // 2
_, _, decode_mean = per_token(mean_context)
triad = dram_triad()
print(f"\ndecode bytes/token at the mean context {mean_context}: "
      f"{decode_mean['bytes'] / 2**20:.1f} MiB "
      f"(weights {decode_mean['weight_bytes'] / 2**20:.1f} MiB, KV read "
      f"{decode_mean['kv_read_bytes'] / 2**20:.2f} MiB); probe DRAM triad "
      + (f"{triad / 1e9:.2f} GB/s (median of 3 quick probes)" if triad else "n/a"))
for name, runs in (("plumb", plumb_runs), ("PyTorch", torch_runs)):
    bw = decode_mean["bytes"] * statistics.median(r["decode"] for r in runs)
    share = f", {100 * bw / triad:.1f}% of triad" if triad else ""
    print(f"  {name}: {bw / 1e9:.2f} GB/s effective{share}")
