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
        peer["convolution" if k == "convolution" else evt.key] += evt.flops

db = os.path.join(tempfile.mkdtemp(prefix="plumb_flops_"), "p.db")
out = subprocess.run([args.plumb, "profile", args.model, "--mode", args.mode, "--batch",
                      str(args.batch), "--threads", "1", "--steps", "1", "--by", "op", "--json",
                      "--db", db], check=True, capture_output=True, text=True).stdout
doc = json.loads(out)
# Compare the same operator instances: the peer attaches FLOPs to the op the user called
# (aten::conv2d in forward; aten::addmm, aten::mm, aten::add wherever they run), so plumb's
# convolution FLOPs are taken from forward rows only, the others by op name in both passes.
plumb = collections.Counter()
for row in doc["passes"][0]["rows"]:
    backward = row["name"].endswith(" (backward)")
    name = row["name"].replace(" (backward)", "")
    k = kind_of(name)
    if k == "convolution" and backward:
        continue  # the peer does not count convolution_backward
    if k == "convolution":
        plumb[k] += row["flops"]
    elif name in peer_ops_with_flops:
        plumb[name] += row["flops"]
plumb_categories = set()
# Categories with FLOPs, from plumb's category view of the same stored profile.
cat = subprocess.run([args.plumb, "profile", args.model, "--mode", args.mode, "--batch",
                      str(args.batch), "--threads", "1", "--steps", "1", "--by", "category",
                      "--json", "--db", db], check=True, capture_output=True, text=True).stdout
for row in json.loads(cat)["passes"][0]["rows"]:
    if row["flops"] > 0:
        plumb_categories.add(row["name"])
peer_category_names = {{"convolution": "Conv", "matrix multiply": "MatMul",
                        "elementwise mul": "Elementwise", "elementwise add": "Elementwise"}[
                           k if k == "convolution" else kind_of(k)] for k in peer}

print(f"{args.model} {args.mode} batch {args.batch}: FLOPs of the operators the peer counts")
print("| operator | PyTorch profiler | plumb | plumb / peer |")
print("|---|---|---|---|")
for k in sorted(peer):
    p, q = peer[k], plumb.get(k, 0)
    print(f"| {k} | {p:,.0f} | {q:,.0f} | {q / p:.4f} |")
print(f"\ncategories with FLOPs: PyTorch profiler {len(peer_category_names)} "
      f"({', '.join(sorted(peer_category_names))}); plumb {len(plumb_categories)} "
      f"({', '.join(sorted(plumb_categories))})")
print("peer ops with FLOPs:", ", ".join(sorted(peer_ops_with_flops)))
