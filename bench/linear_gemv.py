"""How fast can a batch-1 decode stream GPT-2's weights through LibTorch's CPU kernels? Times the
matrix products of one decode token (each layer's q, k, v, o, up and down projections, then the
tied output projection), each on its own weight copy, so every call streams its matrix from
memory as a decode does (a GPT-2 small token reads 472 MiB, far beyond any last-level cache).
Three kernels per product: F.linear on a [1, K] input (what a PyTorch model and plumb's
torch::nn::Linear run: addmm, OpenBLAS's sgemm with M = 1), torch.addmv on the [K] vector
(OpenBLAS's sgemv), and F.linear on a [1, 1, K] input (a decode's [B, T, D] activations).
With --low-precision also the kernels plumb's bf16 and int8 decode run: F.linear with bf16
weights (oneDNN's bf16 GEMM with M = 1, what CPU autocast calls) and quantized::linear_dynamic
with per-channel int8 weights (plumb's int8 for generative models), each on its own copies.
Prints per kernel the bytes streamed per second, per shape and for the whole token, which,
against the probe's DRAM triad, says whether the GEMV path itself caps decode's bandwidth.
Usage: /usr/bin/python3 bench/linear_gemv.py [--preset small] [--threads 2] [--repeat 20]
       [--low-precision]
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
parser.add_argument("--low-precision", action="store_true",
                    help="also bf16 weights (F.linear) and int8 weights (linear_dynamic)")
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


# Each kernel: (the product, the weights it streams, their bytes).
def fp32_bytes(w, b):
    return nbytes(w) + nbytes(b)


kernels = {"F.linear [1, K] (addmm)": (linear_2d, token, fp32_bytes),
           "F.linear [1, 1, K]": (linear_3d, token, fp32_bytes),
           "torch.addmv [K] (gemv)": (addmv, token, fp32_bytes)}
if args.low_precision:
    torch.backends.quantized.engine = "onednn"
    bf16_token = [(n, w.to(torch.bfloat16), None if b is None else b.to(torch.bfloat16))
                  for n, w, b in token]
    bf16_inputs = {k: v.to(torch.bfloat16) for k, v in inputs.items()}

    def bf16_linear(w, b):
        return F.linear(bf16_inputs[w.shape[1]].view(1, -1), w, b)

    def per_channel_int8(w, b):
        scale = (w.abs().amax(1) / 127).clamp_min(1e-12)
        q = torch.quantize_per_channel(w, scale, torch.zeros(w.shape[0], dtype=torch.long), 0,
                                       torch.qint8)
        return torch.ops.quantized.linear_prepack(q, b), w.shape

    int8_token = [(n, per_channel_int8(w, b), b) for n, w, b in token]

    # A decode's activations differ at every call, and so does the range a dynamic product
    # quantizes them at: oneDNN builds (and caches) its int8 kernel for the input's scale, so
    # a repeated input would time a cached kernel that a real decode never gets. Each call
    # scales its input by a factor no call used before (one small multiply per product).
    calls = [0]

    def int8_dynamic(packed_shape, b):
        packed, shape = packed_shape
        calls[0] += 1
        x = inputs[shape[1]].view(1, -1) * (1 + calls[0] * 1e-6)
        return torch.ops.quantized.linear_dynamic(x, packed, False)

    def int8_bytes(packed_shape, b):  # codes, and a scale per output channel
        n, k = packed_shape[1]
        return n * k + 4 * n + nbytes(b)

    kernels["F.linear bf16 weights (oneDNN bf16)"] = (bf16_linear, bf16_token, fp32_bytes)
    kernels["quantized::linear_dynamic int8 weights"] = (int8_dynamic, int8_token, int8_bytes)
print(f"GPT-2 {args.preset}: {len(token)} products, "
      f"{sum(nbytes(w) + nbytes(b) for _, w, b in token) / 2**20:.1f} MiB per token, "
      f"{args.threads} threads, torch {torch.__version__}")
with torch.inference_mode():
    for kname, (kernel, weights, weight_bytes) in kernels.items():
        per_shape = {}
        token_s = []
        for rep in range(args.repeat + 2):  # two untimed tokens first
            start_token = time.perf_counter()
            for name, w, b in weights:
                start = time.perf_counter()
                kernel(w, b)
                elapsed = time.perf_counter() - start
                if rep >= 2:
                    per_shape.setdefault(name, [0.0, 0])
                    per_shape[name][0] += elapsed
                    per_shape[name][1] += weight_bytes(w, b)
            if rep >= 2:
                token_s.append(time.perf_counter() - start_token)
        total = sum(weight_bytes(w, b) for _, w, b in weights)
        median = statistics.median(token_s)
        print(f"\n{kname}: a token's products {median * 1e3:.2f} ms (median of {args.repeat}), "
              f"{total / median / 1e9:.2f} GB/s")
        for name, (seconds, bytes_read) in per_shape.items():
            print(f"  {name:16s} {bytes_read / seconds / 1e9:6.2f} GB/s")
