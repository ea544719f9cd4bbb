"""plumb's cost model vs. PyTorch's profiler (torch.profiler, with_flops=True; Debian's
python3-torch 1.13) on the same model and input: per kind of operator the peer counts,
FLOPs side by side, and which categories each tool assigns any FLOPs to.

The peer attaches FLOPs at the operator the user calls (aten::conv2d, aten::addmm, ...),
plumb at the leaf kernel (aten::mkldnn_convolution, ...); both are mapped to the same kinds.
Usage: /usr/bin/python3 bench/compare_profiler_flops.py [--plumb build/plumb] [--model resnet50]
       [--mode infer|train] [--batch 1]
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pytorch_models import MODELS  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--plumb", default=os.path.join(os.path.dirname(__file__), "..", "build", "plumb"))
parser.add_argument("--model", default="resnet50")
parser.add_argument("--mode", default="infer", choices=["infer", "train"])
parser.add_argument("--batch", type=int, default=1)
args = parser.parse_args()

# Kinds of work both tools can be compared on, and the op names each uses for them.
def kind_of(op_name, category=None):
    base = op_name.split("::")[-1].rstrip("_")
    if "conv" in base:
        return "convolution"
    if base in ("mm", "addmm", "bmm", "baddbmm", "matmul", "linear"):
        return "matrix multiply"
    if base == "mul":
        return "elementwise mul"
    if base == "add":
        return "elementwise add"
    return None


torch.set_num_threads(1)
torch.manual_seed(0)
model = MODELS[args.model](args.batch)
batch = model.make_batch()[0]
step = model.infer_step if args.mode == "infer" else model.train_step
if args.mode == "infer":
    model.net.eval()
ctx = torch.inference_mode() if args.mode == "infer" else torch.enable_grad()
with ctx:
    step(batch)  # warm-up
    with profile(activities=[ProfilerActivity.CPU], with_flops=True, record_shapes=True) as prof:
        step(batch)
peer = collections.Counter()
peer_ops_with_flops = set()
for evt in prof.key_averages():
    if evt.flops:
        peer_ops_with_flops.add(evt.key)
        k = kind_of(evt.key)
        peer[k or evt.key] += evt.flops

db = os.path.join(tempfile.mkdtemp(prefix="plumb_flops_"), "p.db")
out = subprocess.run([args.plumb, "profile", args.model, "--mode", args.mode, "--batch",
                      str(args.batch), "--threads", "1", "--steps", "1", "--by", "op", "--json",
                      "--db", db], check=True, capture_output=True, text=True).stdout
doc = json.loads(out)
plumb = collections.Counter()
plumb_categories = set()
for row in doc["passes"][0]["rows"]:
    name = row["name"].replace(" (backward)", "")
    k = kind_of(name)
    if k:
        plumb[k] += row["flops"]
# Categories with FLOPs, from plumb's category view of the same stored profile.
cat = subprocess.run([args.plumb, "profile", args.model, "--mode", args.mode, "--batch",
                      str(args.batch), "--threads", "1", "--steps", "1", "--by", "category",
                      "--json", "--db", db], check=True, capture_output=True, text=True).stdout
for row in json.loads(cat)["passes"][0]["rows"]:
    if row["flops"] > 0:
        plumb_categories.add(row["name"])
peer_categories = {k for k in peer if k in ("convolution", "matrix multiply", "elementwise mul",
                                            "elementwise add")}
peer_category_names = {{"convolution": "Conv", "matrix multiply": "MatMul",
                        "elementwise mul": "Elementwise", "elementwise add": "Elementwise"}[k]
                       for k in peer_categories}

print(f"{args.model} {args.mode} batch {args.batch}: FLOPs per kind of operator")
print("| kind | PyTorch profiler | plumb | plumb / peer |")
print("|---|---|---|---|")
for k in sorted(set(peer) | set(plumb)):
    if k not in ("convolution", "matrix multiply", "elementwise mul", "elementwise add"):
        continue
    p, q = peer.get(k, 0), plumb.get(k, 0)
    ratio = f"{q / p:.4f}" if p else "-"
    print(f"| {k} | {p:,.0f} | {q:,.0f} | {ratio} |")
other_peer = {k: v for k, v in peer.items() if k not in peer_categories}
if other_peer:
    print("peer FLOPs on other ops:", dict(other_peer))
print(f"\ncategories with FLOPs: PyTorch profiler {len(peer_category_names)} "
      f"({', '.join(sorted(peer_category_names))}); plumb {len(plumb_categories)} "
      f"({', '.join(sorted(plumb_categories))})")
print("peer ops with FLOPs:", ", ".join(sorted(peer_ops_with_flops)))
