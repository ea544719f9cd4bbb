"""Times one of bench/pytorch_models.py's models in plain PyTorch, the way plumb times its own:
a pool of pre-generated synthetic batches cycled, `warmup` untimed-for-the-result iterations,
then `iters` timed iterations; prints one JSON line with the mean step time and throughput.

--dtype runs the model the way a PyTorch user gets that precision on a CPU: bf16 with
torch.autocast (inference: one autocast region around the loop, so weight casts are cached as in
plumb; training: a region per step, as the autocast recipe writes it); int8 (inference) with FX
graph-mode post-training static quantization on the onednn engine, calibrated on batches from
the model's own generator. --memory-format channels_last converts the model and the inputs.
"""
import argparse
import contextlib
import json
import time

import torch

from pytorch_models import MODELS, trainable_parameters

parser = argparse.ArgumentParser()
parser.add_argument("--model", required=True, choices=sorted(MODELS))
parser.add_argument("--mode", required=True, choices=["train", "infer"])
parser.add_argument("--batch", type=int, required=True)
parser.add_argument("--threads", type=int, required=True)
parser.add_argument("--warmup", type=int, required=True)
parser.add_argument("--iters", type=int, required=True)
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--dtype", default="fp32", choices=["fp32", "bf16", "int8"])
parser.add_argument("--memory-format", default="contiguous", choices=["contiguous", "channels_last"])
args = parser.parse_args()
if args.dtype == "int8" and args.mode != "infer":
    raise SystemExit("int8 is post-training quantization: inference only")

torch.set_num_threads(args.threads)
torch.manual_seed(args.seed)
model = MODELS[args.model](args.batch)
batches = [model.make_batch() for _ in range(3)]
units = batches[0][1]


def to_format(x):
    if args.memory_format == "channels_last" and torch.is_tensor(x) and x.dim() == 4:
        return x.contiguous(memory_format=torch.channels_last)
    return x


if args.memory_format == "channels_last":
    model.net = model.net.to(memory_format=torch.channels_last)
    batches = [(tuple(to_format(t) for t in b), u) for b, u in batches]

if args.mode == "infer":
    model.net.eval()
    step, context = model.infer_step, torch.inference_mode()
else:
    model.net.train()
    step, context = model.train_step, torch.enable_grad()

if args.dtype == "int8":
    from torch.ao.quantization import get_default_qconfig_mapping
    from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx
    torch.backends.quantized.engine = "onednn"
    example = batches[0][0][0]
    prepared = prepare_fx(model.net, get_default_qconfig_mapping("onednn"), (example,))
    with torch.no_grad():
        for _ in range(4):  # plumb calibrates on 4 batches of the workload's generator too
            prepared(to_format(model.make_batch()[0][0]))
    model.net = convert_fx(prepared)

# bf16 inference: one autocast region for the whole loop; training: one per step.
loop_autocast = (torch.autocast("cpu", dtype=torch.bfloat16)
                 if args.dtype == "bf16" and args.mode == "infer" else contextlib.nullcontext())
step_autocast = args.dtype == "bf16" and args.mode == "train"

times = []
with context, loop_autocast:
    for i in range(args.warmup + args.iters):
        start = time.perf_counter()
        if step_autocast:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                step(batches[i % len(batches)][0])
        else:
            step(batches[i % len(batches)][0])
        elapsed = time.perf_counter() - start
        if i >= args.warmup:
            times.append(elapsed)
mean = sum(times) / len(times)
print(json.dumps({"mean_step_s": mean, "throughput": units / mean, "unit": model.unit,
                  "n": len(times), "params": trainable_parameters(model)}))
