"""GPT-2 with a KV cache in plain PyTorch eager (Debian's python3-torch), the architecture plumb's
`gpt2` workload builds (src/plumb/workloads/llm/gpt2.cpp, decoder_lm.cpp), written the way a
PyTorch user writes it (nanoGPT's block with a cache): token + learned position embeddings,
pre-norm blocks (LayerNorm eps 1e-5 -> q, k, v, o projections with biases -> residual;
LayerNorm -> 4d GELU(tanh) -> d -> residual), a final LayerNorm and the output projection tied
to the token embedding. A generation is timed as plumb's core/generation.cpp times it: one
prefill call over the prompt that allocates the cache for prompt + gen positions per request
(reused while its shape holds) and returns the first greedy token (time to first token), then
gen - 1 decode calls, each writing its keys and values into the cache in place and returning
the next token.

Run as a script it times `warmup` + `iters` generations (plumb's runner's counts, given by
bench/compare_llm_pytorch.py) and prints one JSON line: every TTFT and decode call, the
parameter count, the cache's bytes, and one prefill's and one decode's matrix FLOPs (from
torch.profiler) and bytes (from the tensors it reads) to check against `plumb info`.
--profile also prints torch.profiler's operator table of one generation's decode calls;
--gemv runs a batch-1 decode's products as GEMV (see GEMV below), a diagnostic of the kernel.
"""
import argparse
import json
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

# gpt2.cpp's presets: layers, d_model, heads.
PRESETS = {"small": (12, 768, 12), "medium": (24, 1024, 16), "large": (36, 1280, 20),
           "xl": (48, 1600, 25)}
VOCAB, POSITIONS = 50257, 1024
# --gemv: a single-row product (a batch-1 decode) through torch.addmv (OpenBLAS's sgemv) instead
# of F.linear (addmm: OpenBLAS's sgemm with M = 1). A diagnostic, not what the comparison runs:
# bench/linear_gemv.py measures the two kernels' bandwidth.
GEMV = False


def project(x, weight, bias=None):  # x [..., K] -> [..., N]
    if GEMV and x.numel() == x.shape[-1]:
        v = x.reshape(-1)
        out = torch.mv(weight, v) if bias is None else torch.addmv(bias, weight, v)
        return out.view(*x.shape[:-1], -1)
    return F.linear(x, weight, bias)


class Block(nn.Module):
    def __init__(self, d, heads, layers):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(d, eps=1e-5)
        self.q_proj, self.k_proj, self.v_proj = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.o_proj = nn.Linear(d, d)
        self.ln_2 = nn.LayerNorm(d, eps=1e-5)
        self.up_proj, self.down_proj = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        for lin in (self.q_proj, self.k_proj, self.v_proj, self.up_proj):
            nn.init.normal_(lin.weight, std=0.02)
            nn.init.zeros_(lin.bias)
        for lin in (self.o_proj, self.down_proj):  # GPT-2's 1/sqrt(2 layers) residual scaling
            nn.init.normal_(lin.weight, std=0.02 / math.sqrt(2 * layers))
            nn.init.zeros_(lin.bias)
        self.k_cache = self.v_cache = None

    def attention(self, x, start):
        B, T, D = x.shape
        hd = D // self.heads
        q = self.proj(self.q_proj, x).view(B, T, self.heads, hd).transpose(1, 2)  # [B, H, T, hd]
        k = self.proj(self.k_proj, x).view(B, T, self.heads, hd).transpose(1, 2)
        v = self.proj(self.v_proj, x).view(B, T, self.heads, hd).transpose(1, 2)
        self.k_cache[:, :, start:start + T] = k  # in place, no concatenation
        self.v_cache[:, :, start:start + T] = v
        keys = self.k_cache[:, :, :start + T]  # [B, H, start + T, hd]
        values = self.v_cache[:, :, :start + T]
        att = (q @ keys.transpose(-2, -1)) * (1.0 / math.sqrt(hd))  # [B, H, T, start + T]
        if T > 1:  # a single new token sees every cached position
            future = torch.ones(T, start + T, dtype=torch.bool).triu(start + 1)
            att = att.masked_fill(future, float("-inf"))
        y = F.softmax(att, dim=-1) @ values  # [B, H, T, hd]
        return self.proj(self.o_proj, y.transpose(1, 2).contiguous().view(B, T, D))  # [B, T, D]

    @staticmethod
    def proj(linear, x):
        return project(x, linear.weight, linear.bias)

    def forward(self, x, start):
        x = x + self.attention(self.ln_1(x), start)
        up = F.gelu(self.proj(self.up_proj, self.ln_2(x)), approximate="tanh")  # [B, T, 4D]
        return x + self.proj(self.down_proj, up)


class Gpt2(nn.Module):
    def __init__(self, layers, d, heads):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(VOCAB, d), nn.Embedding(POSITIONS, d)
        nn.init.normal_(self.wte.weight, std=0.02)
        nn.init.normal_(self.wpe.weight, std=0.01)
        self.blocks = nn.ModuleList(Block(d, heads, layers) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d, eps=1e-5)
        self.heads, self.length = heads, 0

    def allocate_cache(self, batch, capacity):
        d = self.wte.weight.shape[1]
        shape = (batch, self.heads, capacity, d // self.heads)
        for b in self.blocks:
            if b.k_cache is None or b.k_cache.shape != shape:
                b.k_cache, b.v_cache = torch.empty(shape), torch.empty(shape)

    def cache_bytes(self):
        return sum(nbytes(b.k_cache) + nbytes(b.v_cache) for b in self.blocks)

    def forward(self, tokens, start):  # tokens [B, T] at positions start ..
        x = self.wte(tokens) + self.wpe(torch.arange(start, start + tokens.shape[1]))  # [B, T, D]
        for b in self.blocks:
            x = b(x, start)
        last = self.ln_f(x[:, -1])  # only the last position is projected to the vocabulary
        return project(last, self.wte.weight).argmax(-1)  # tied output projection; [B]

    def prefill(self, prompt, gen):
        self.allocate_cache(prompt.shape[0], prompt.shape[1] + gen)
        self.length = prompt.shape[1]
        return self.forward(prompt, 0)

    def decode(self, tokens):
        out = self.forward(tokens.view(-1, 1), self.length)
        self.length += 1
        return out


def nbytes(t):  # Tensor.nbytes arrived after PyTorch 1.13
    return t.numel() * t.element_size()


def build(preset, layers=0, d_model=0, heads=0):
    pl, pd, ph = PRESETS[preset]
    return Gpt2(layers or pl, d_model or pd, heads or ph)


def generate(model, prompt, gen):
    """One generation, timed per call: (TTFT seconds, [decode call seconds], tokens [B, gen])."""
    start = time.perf_counter()
    tokens = [model.prefill(prompt, gen)]
    ttft = time.perf_counter() - start
    decode_s = []
    for _ in range(gen - 1):
        start = time.perf_counter()
        tokens.append(model.decode(tokens[-1]))
        decode_s.append(time.perf_counter() - start)
    return ttft, decode_s, torch.stack(tokens, 1)


def matrix_flops(call):
    """FLOPs of the matrix products one call runs (torch.profiler's count for mm/addmm/bmm,
    2 per multiply-add; plumb info counts the same products)."""
    with torch.profiler.profile(with_flops=True) as prof:
        call()
    products = ("aten::mm", "aten::addmm", "aten::bmm")
    return sum(e.flops for e in prof.key_averages() if e.key in products)


def decode_bytes_per_token(model, batch, context):
    """Bytes one decode call reads and writes per request at `context` cached positions, from
    the tensors it touches: every parameter once (the position table one row, the token table
    whole: it is the output projection), the cache's keys and values of `context` positions,
    and the new token's keys and values written."""
    params = sum(nbytes(p) for p in model.parameters())
    pos = model.wpe.weight
    weights = params - nbytes(pos) + nbytes(pos[0])
    per_position = sum(nbytes(b.k_cache[:, :, 0]) + nbytes(b.v_cache[:, :, 0])
                       for b in model.blocks)  # keys and values of one position, every layer
    return (weights + per_position * (context + 1)) / batch


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--preset", default="small", choices=sorted(PRESETS))
    parser.add_argument("--prompt", type=int, default=128)
    parser.add_argument("--gen", type=int, default=64)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--warmup", type=int, required=True)
    parser.add_argument("--iters", type=int, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--profile", action="store_true",
                        help="print torch.profiler's operator table of one generation's decode "
                             "calls after the timed ones (to set beside plumb profile --phase "
                             "decode)")
    parser.add_argument("--gemv", action="store_true",
                        help="batch-1 decode's products through torch.addmv (diagnostic; the FLOP "
                             "check then misses them: the profiler counts no mv)")
    args = parser.parse_args()
    global GEMV
    GEMV = args.gemv

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    model = build(args.preset).eval()
    prompts = [torch.randint(VOCAB, (args.batch, args.prompt)) for _ in range(3)]
    ttft, decode = [], []
    with torch.inference_mode():
        for i in range(args.warmup + args.iters):
            t, d, _ = generate(model, prompts[i % len(prompts)], args.gen)
            if i >= args.warmup:
                ttft.append(t)
                decode.append(d)
        # The work check, outside the timed loop: a prefill, and the last decode call of a
        # generation (context prompt + gen - 1 positions). Counted on the Linear path: the
        # profiler counts no FLOPs for addmv, so --gemv's products would go missing.
        timed_gemv, GEMV = GEMV, False
        prefill_flops = matrix_flops(lambda: model.prefill(prompts[0], args.gen))
        token = model.prefill(prompts[0], args.gen)
        for _ in range(args.gen - 2):
            token = model.decode(token)
        context = args.prompt + args.gen - 1
        decode_flops = matrix_flops(lambda: model.decode(token))
        GEMV = timed_gemv
        if args.profile:
            token = model.prefill(prompts[0], args.gen)
            with torch.profiler.profile() as prof:
                for _ in range(args.gen - 1):
                    token = model.decode(token)
            print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=20))
    print(json.dumps({
        "ttft_s": ttft, "decode_s": decode,
        "params": sum(p.numel() for p in model.parameters()),
        "kv_cache_bytes": model.cache_bytes(),
        "prefill_flops_per_token": prefill_flops / (args.batch * args.prompt),
        "decode_context": context,
        "decode_flops_per_token": decode_flops / args.batch,
        "decode_bytes_per_token": decode_bytes_per_token(model, args.batch, context),
        "torch": torch.__version__,
    }))


if __name__ == "__main__":
    main()
