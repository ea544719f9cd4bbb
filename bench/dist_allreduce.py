#!/usr/bin/env python3
"""plumb's all-reduce sweep against Gloo's all-reduce timed from PyTorch.

The same engine (Gloo inside LibTorch 1.13), the same buffers (fp32, 1 KiB to 256 MiB, x4),
the same repetition rule (max(5, min(200, 64 MiB / bytes)) back to back after 2 warm-up calls
and a barrier), two workers on 127.0.0.1, each pinned to one core of its own, as plumb dist
pins them. Reports each size's bus bandwidth both ways and plumb's as a ratio of PyTorch's.

Usage: bench/dist_allreduce.py [PLUMB_BINARY] [ROUNDS]   (needs python3-torch; an idle machine)
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

SIZES = [1024 * 4**i for i in range(10)]  # 1 KiB .. 256 MiB


def repetitions(nbytes):
    return max(5, min(200, (64 << 20) // max(nbytes, 1)))


def worker(rank, world, port, out):
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[rank]})
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world)
    rows = []
    for nbytes in SIZES:
        buf = torch.ones(max(1, nbytes // 4), dtype=torch.float32)
        for _ in range(2):
            dist.all_reduce(buf)
        dist.barrier()
        reps = repetitions(nbytes)
        start = time.perf_counter()
        for _ in range(reps):
            dist.all_reduce(buf)
        mean = torch.tensor([(time.perf_counter() - start) / reps], dtype=torch.float64)
        dist.all_reduce(mean, op=dist.ReduceOp.MAX)  # the slowest worker, as plumb reports
        rows.append((buf.numel() * 4, mean.item()))
    if rank == 0:
        with open(out, "w") as f:
            json.dump(rows, f)
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pytorch_sweep(world, tmp):
    out = os.path.join(tmp, "pytorch.json")
    mp.spawn(worker, args=(world, free_port(), out), nprocs=world, join=True)
    with open(out) as f:
        return dict(json.load(f))


def plumb_sweep(plumb, world, tmp):
    doc = json.loads(subprocess.run(
        [plumb, "dist", "autoenc", "--workers", str(world), "--steps", "2", "--warmup-steps", "1",
         "--allreduce-sweep", "--json", "--db", os.path.join(tmp, "dist.db")],
        check=True, capture_output=True, text=True).stdout)
    return {r["bytes"]: r["seconds"] for r in doc["worlds"][0]["allreduce"]}


def median(values):
    v = sorted(values)
    return v[len(v) // 2]


def main():
    plumb = sys.argv[1] if len(sys.argv) > 1 else "build/plumb"
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    world = 2
    pytorch, ours = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(rounds):  # alternating, so that drift hits both
            pytorch.append(pytorch_sweep(world, tmp))
            ours.append(plumb_sweep(plumb, world, tmp))
    factor = 2 * (world - 1) / world
    print(f"all-reduce, {world} workers x 1 core, fp32, median of {rounds} alternating rounds; "
          f"bus bandwidth = bytes / time x {factor:g}")
    print(f"{'bytes':>10} {'PyTorch busbw':>15} {'plumb busbw':>13} {'plumb / PyTorch':>16}")
    for nbytes in SIZES:
        py = nbytes / median([r[nbytes] for r in pytorch]) * factor
        pl = nbytes / median([r[nbytes] for r in ours]) * factor
        print(f"{nbytes:>10} {py / 1e6:>11.1f} MB/s {pl / 1e6:>9.1f} MB/s {pl / py:>16.2f}")


if __name__ == "__main__":
    main()
