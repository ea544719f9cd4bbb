#!/usr/bin/env bash
# Checks plumb's probe against likwid-bench run the same way (issue 4's targets): the fp32
# instruction peak against likwid's single-precision FMA "peakflops" kernel, and the DRAM
# bandwidths against likwid's load/store/copy/stream kernels at the same thread counts and
# the same total working set. Prints a side-by-side table with plumb/likwid ratios.
#
# Usage: bench/compare_likwid.sh [--json FILE] [--plumb BIN] [--mode thorough|quick] [--repeat N]
#   --json FILE  compare a saved `plumb probe --json` document instead of running plumb
#   --plumb BIN  the plumb binary (default ./build/plumb)
#   --mode M     probe mode when running plumb (default thorough)
#   --repeat N   likwid-bench runs per figure, best kept, as plumb keeps its best (default 3);
#                the fp32 peak is taken in N alternating rounds of a quick plumb probe and
#                likwid's kernel (when plumb is run here), each side's best kept: a VM's host
#                moves the core between clock states over minutes (the Xeon VM: 2.9 to 3.7 GHz
#                under AVX-512 load), and figures taken minutes apart compare clock states, not
#                kernels
#
# Same conventions on both sides: an FMA is 2 FLOPs per lane; bytes are counted per stream
# without write-allocate traffic. plumb's triad a = b + s*c (3 streams) is likwid's "stream";
# likwid's "triad" is the 4-stream a = b*c + d and is not used. likwid's load/store/copy
# kernels use doubles, plumb's floats: the bytes moved are the same. likwid-bench needs no
# root and no MSR access. Run on an otherwise idle machine: both sides are best-of-N.
set -euo pipefail
cd "$(dirname "$0")/.."

json="" plumb=./build/plumb mode=thorough repeat=3
while [ $# -gt 0 ]; do
  case "$1" in
    --json) json="$2"; shift 2 ;;
    --plumb) plumb="$2"; shift 2 ;;
    --mode) mode="$2"; shift 2 ;;
    --repeat) repeat="$2"; shift 2 ;;
    -h | --help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

if ! command -v likwid-bench > /dev/null; then
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq likwid
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ -z "$json" ]; then
  if [ ! -x "$plumb" ]; then
    echo "no plumb binary at $plumb: build it first (cmake --build build) or pass --plumb" >&2
    exit 1
  fi
  echo "running: $plumb probe --$mode --refresh --json (scratch database)" >&2
  "$plumb" probe --"$mode" --refresh --json --db "$tmp/probe.db" > "$tmp/probe.json"
  json="$tmp/probe.json"
fi

# The plumb binary for the alternating fp32 rounds; "" when comparing a saved document.
alternate_with=""
[ "$json" = "$tmp/probe.json" ] && alternate_with="$plumb"

/usr/bin/python3 - "$json" "$repeat" "$alternate_with" "$tmp" << 'EOF'
import json
import re
import subprocess
import sys

doc = json.load(open(sys.argv[1]))
repeat = int(sys.argv[2])
plumb_binary, scratch = sys.argv[3], sys.argv[4]

flags = set()
for line in open("/proc/cpuinfo"):
    if line.startswith("flags"):
        flags = set(line.split(":", 1)[1].split())
        break
# likwid-bench kernel names for the widest ISA both sides use.
if "avx512f" in flags:
    k = dict(peak="peakflops_sp_avx512_fma", stream="stream_sp_avx512_fma", load="load_avx512",
             store="store_avx512", copy="copy_avx512")
elif "avx2" in flags and "fma" in flags:
    k = dict(peak="peakflops_sp_avx_fma", stream="stream_sp_avx_fma", load="load_avx",
             store="store_avx", copy="copy_avx")
else:
    k = dict(peak="peakflops_sp_sse", stream="stream_sp_sse", load="load_sse",
             store="store_sse", copy="copy_sse")


def busy_fraction(seconds=1.0):
    """Share of all CPUs busy over `seconds` while this script itself sleeps: other load."""
    def sample():
        v = [int(x) for x in open("/proc/stat").readline().split()[1:]]
        return sum(v), v[3] + v[4]  # total, idle + iowait
    import time
    t0, i0 = sample()
    time.sleep(seconds)
    t1, i1 = sample()
    return 1 - (i1 - i0) / max(1, t1 - t0)


def likwid(test, size_bytes, threads, field):
    """Best of `repeat` runs of one likwid-bench test; `field` is MFlops/s or MByte/s."""
    best = 0.0
    # likwid-bench reads a size in bytes as a 32-bit int: larger ones in its kB (1000 bytes).
    size = f"{size_bytes}B" if size_bytes < 2**31 else f"{round(size_bytes / 1000)}kB"
    cmd = ["likwid-bench", "-t", test, "-W", f"N:{size}:{threads}"]
    for _ in range(repeat):
        out = subprocess.run(cmd, capture_output=True, text=True).stdout
        m = re.search(rf"^{re.escape(field)}:\s*([0-9.]+)", out, re.M)
        if not m:
            sys.exit(f"no '{field}' in the output of: {' '.join(cmd)}\n{out[-2000:]}")
        best = max(best, float(m.group(1)) * 1e6)
    return best, " ".join(cmd)


rows = []  # (figure, threads, working set, plumb, likwid, likwid command)
fp32 = doc["peaks"]["fp32"]
peak_threads = {p["threads"]: p["flops"] for p in fp32["by_threads"]}
dram = {l["threads"]: l for l in doc["bandwidth"]["levels"] if l["level"] == "dram"}
curve = {(p["kernel"], p["threads"], p["working_set_bytes"]): p["bytes_per_s"]
         for p in doc["bandwidth"].get("curve", doc["bandwidth"].get("points", []))}
threads = sorted(set(peak_threads) & set(dram)) or sorted(peak_threads)
busy_before = busy_fraction()

def plumb_fp32_by_threads():
    """One quick probe's fp32 instruction peak per thread count."""
    out = subprocess.run([plumb_binary, "probe", "--quick", "--refresh", "--json", "--db",
                          f"{scratch}/alternate.db"], capture_output=True, text=True, check=True)
    return {p["threads"]: p["flops"] for p in json.loads(out.stdout)["peaks"]["fp32"]["by_threads"]}


# 16 kB per thread: likwid's kernel loads one L1-resident vector per 15 FMAs.
likwid_peak = {t: likwid(k["peak"], 16000 * t, t, "MFlops/s") for t in threads}
rounds = repeat if plumb_binary else 0
for _ in range(rounds):
    for t, flops in plumb_fp32_by_threads().items():
        if t in peak_threads:
            peak_threads[t] = max(peak_threads[t], flops)
    for t in threads:
        theirs, cmd = likwid(k["peak"], 16000 * t, t, "MFlops/s")
        likwid_peak[t] = (max(likwid_peak[t][0], theirs), cmd)
for t in threads:
    rows.append(("fp32 peak GFLOP/s", t, None, peak_threads[t], likwid_peak[t][0], likwid_peak[t][1]))
for t in threads:
    if t not in dram:
        continue
    level = dram[t]
    ws = level["working_set_bytes"]  # where plumb's best DRAM triad was measured
    for ours, test in (("triad", "stream"), ("copy", "copy"), ("read", "load"), ("write", "store")):
        # plumb's own point at exactly this size and thread count where the document has the
        # curve (the level value is the best over all DRAM-sized points: not like for like).
        mine = curve.get((ours, t, ws), level[ours])
        theirs, cmd = likwid(k[test], ws, t, "MByte/s")
        rows.append((f"DRAM {ours} GB/s", t, ws, mine, theirs, cmd))
busy_after = busy_fraction()

if rounds:
    print(f"fp32 peak: best of the {doc.get('mode', '?')} probe and {rounds} quick probes, "
          f"alternating with {rounds} rounds of likwid-bench's kernel ({repeat} runs each)")
print(f"plumb probe ({doc.get('mode', '?')}) vs likwid-bench (best of {repeat} runs each); "
      f"CPUs busy with other work: {busy_before:.0%} before the likwid runs, "
      f"{busy_after:.0%} after\n")
print(f"{'figure':<18} {'thr':>3} {'working set':>11} {'plumb':>8} {'likwid':>8} {'ratio':>6}  "
      "likwid kernel")
for name, t, ws, ours, theirs, cmd in rows:
    ratio = ours / theirs if theirs > 0 else float("nan")
    mark = "" if abs(ratio - 1) <= 0.10 else "  <- outside 10%"
    ws_s = f"{ws / 2**20:.0f} MiB" if ws else "L1"
    test = cmd.split()[2]
    print(f"{name:<18} {t:>3} {ws_s:>11} {ours / 1e9:>8.1f} {theirs / 1e9:>8.1f} {ratio:>6.3f}  "
          f"{test}{mark}")
print("\nlikwid commands:")
for cmd in sorted({r[5] for r in rows}):
    print("  " + cmd)
if max(busy_before, busy_after) > 0.1:
    print("\nwarning: the machine was not idle; other processes lower both sides' figures")
EOF
