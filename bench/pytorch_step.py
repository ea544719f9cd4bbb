"""Times one of bench/pytorch_models.py's models in plain PyTorch, the way plumb times its own:
a pool of pre-generated synthetic batches cycled, `warmup` untimed-for-the-result iterations,
then `iters` timed iterations; prints one JSON line with the mean step time and throughput.
"""
import argparse
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
args = parser.parse_args()

torch.set_num_threads(args.threads)
torch.manual_seed(args.seed)
model = MODELS[args.model](args.batch)
batches = [model.make_batch() for _ in range(3)]
units = batches[0][1]
if args.mode == "infer":
    model.net.eval()
    step, context = model.infer_step, torch.inference_mode()
else:
    model.net.train()
    step, context = model.train_step, torch.enable_grad()

times = []
with context:
    for i in range(args.warmup + args.iters):
        start = time.perf_counter()
        step(batches[i % len(batches)][0])
        elapsed = time.perf_counter() - start
        if i >= args.warmup:
            times.append(elapsed)
mean = sum(times) / len(times)
print(json.dumps({"mean_step_s": mean, "throughput": units / mean, "unit": model.unit,
                  "n": len(times), "params": trainable_parameters(model)}))
