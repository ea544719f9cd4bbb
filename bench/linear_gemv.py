"""How fast can a batch-1 decode stream GPT-2's weights through LibTorch's CPU kernels? Times the
matrix products of one decode token (each layer's q, k, v, o, up and down projections, then the
tied output projection), each on its own weight copy, so every call streams its matrix from
memory as a decode does (a GPT-2 small token reads 472 MiB, far beyond any last-level cache).
Three kernels per product: F.linear on a [1, K] input (what a PyTorch model and plumb's
torch::nn::Linear run: addmm, OpenBLAS's sgemm with M = 1), torch.addmv on the [K] vector
(OpenBLAS's sgemv), and F.linear on a [1, 1, K] input (a decode's [B, T, D] activations).
Prints per kernel the bytes streamed per second, per shape and for the whole token, which,
against the probe's DRAM triad, says whether the GEMV path itself caps decode's bandwidth.
Usage: /usr/bin/python3 bench/linear_gemv.py [--preset small] [--threads 2] [--repeat 20]
"""
import argparse
import statistics
import time

import torch
import torch.nn.functional as F

from pytorch_gpt2 import PRESETS, VOCAB

parser = argparse.ArgumentParser()
parser.add_argument("--preset", default="small", choices=sorted(PRESETS))
parser.add_argument("--threads", type=int, default=2)
parser.add_argument("--repeat", type=int, default=20, help="timed tokens per kernel")
args = parser.parse_args()
torch.set_num_threads(args.threads)

layers, d, _ = PRESETS[args.preset]
shapes = {"q/k/v/o [d, d]": (d, d), "up [4d, d]": (4 * d, d), "down [d, 4d]": (d, 4 * d)}
per_layer = ["q/k/v/o [d, d]"] * 4 + ["up [4d, d]", "down [d, 4d]"]
# One token's products in order: [(shape name, weight [N, K], bias [N] or None)].
token = [(name, torch.randn(shapes[name]) * 0.02, torch.zeros(shapes[name][0]))
         for _ in range(layers) for name in per_layer]
token.append(("lm_head [V, d]", torch.randn(VOCAB, d) * 0.02, None))  # tied: no bias
inputs = {k: torch.randn(k) for k in {w.shape[1] for _, w, _ in token}}


def linear_2d(w, b):
    return F.linear(inputs[w.shape[1]].view(1, -1), w, b)


def linear_3d(w, b):
    return F.linear(inputs[w.shape[1]].view(1, 1, -1), w, b)


def addmv(w, b):
    x = inputs[w.shape[1]]
    return torch.mv(w, x) if b is None else torch.addmv(b, w, x)


def nbytes(t):
    return 0 if t is None else t.numel() * t.element_size()


kernels = {"F.linear [1, K] (addmm)": linear_2d, "F.linear [1, 1, K]": linear_3d,
           "torch.addmv [K] (gemv)": addmv}
print(f"GPT-2 {args.preset}: {len(token)} products, "
      f"{sum(nbytes(w) + nbytes(b) for _, w, b in token) / 2**20:.1f} MiB per token, "
      f"{args.threads} threads, torch {torch.__version__}")
with torch.inference_mode():
    for kname, kernel in kernels.items():
        per_shape = {}
        token_s = []
        for rep in range(args.repeat + 2):  # two untimed tokens first
            start_token = time.perf_counter()
            for name, w, b in token:
                start = time.perf_counter()
                kernel(w, b)
                elapsed = time.perf_counter() - start
                if rep >= 2:
                    per_shape.setdefault(name, [0.0, 0])
                    per_shape[name][0] += elapsed
                    per_shape[name][1] += nbytes(w) + nbytes(b)
            if rep >= 2:
                token_s.append(time.perf_counter() - start_token)
        total = sum(nbytes(w) + nbytes(b) for _, w, b in token)
        median = statistics.median(token_s)
        print(f"\n{kname}: a token's products {median * 1e3:.2f} ms (median of {args.repeat}), "
              f"{total / median / 1e9:.2f} GB/s")
        for name, (seconds, bytes_read) in per_shape.items():
            print(f"  {name:16s} {bytes_read / seconds / 1e9:6.2f} GB/s")
