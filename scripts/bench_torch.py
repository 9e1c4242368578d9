#!/usr/bin/env python3
"""PyTorch counterparts of moe-bench's cases, for a side-by-side comparison in one GPU session.

    python3 scripts/bench_torch.py [--filter REGEX] [--repeat 50] [--warmup 10] [--json-out FILE] [--no-compile]
    python3 scripts/bench_torch.py --compare moe-bench.jsonl torch-bench.jsonl   (no PyTorch needed)

Same case names, shapes, FLOP and byte formulas, timing method and table columns as moe-bench
(lib/bench/): the median of --repeat calls after --warmup calls, each call between its own pair of
CUDA events, a 256 MiB buffer zeroed before each call (cold L2), random inputs, bf16 activations,
f32 master parameters under autocast for the layers. Ceilings are measured here too (a 1 GiB
device-to-device copy, counted read + write, and an 8192^3 torch.matmul), so "% ceil" is relative to
this process's own measurements. Row labels say what PyTorch ran ("torch.matmul", "sdpa fwd", ...).
The whole-model cases (model.*: one training update, rows with tokens/s) are in bench_torch_models.py,
eager ("update") and torch.compile ("update.compile", unless --no-compile); --scale small / tiny
shrinks them for CPU smoke runs. Not imported by any test (it needs a GPU and PyTorch); --compare
merges two JSON-lines files by row name and prints moe ms, torch ms and their ratio (and tokens/s).
"""
import argparse
import contextlib
import json
import math
import re
import statistics
import sys
import time

import bench_torch_models

FORMAT = "%-34s %-26s %-5s %10s %9s %8s %8s %7s  %s"


# ----------------------------------------------------------------------------------------------------
# Formulas (the same as lib/bench/*.cpp and attention_flops() in lib/ops/attention.cpp)

def attention_flops(B, H, Tq, Tk, D, causal, backward):
    """2 GEMMs forward, 5 backward, 2*D flops per visible (query, key) pair (causal: j <= i + Tk - Tq)."""
    if causal:
        pairs = sum(min(max(i + (Tk - Tq) + 1, 0), Tk) for i in range(Tq))
    else:
        pairs = Tq * Tk
    return 2.0 * B * H * pairs * D * (5 if backward else 2)


# ----------------------------------------------------------------------------------------------------
# Rows and output

class Row:
    def __init__(self, case, label, shape, dtype, ms, flops=0.0, nbytes=0.0, ratio=0.0, baseline="", note="",
                 tokens=0.0):
        self.case, self.label, self.shape, self.dtype = case, label, shape, dtype
        self.median_ms, self.min_ms, self.max_ms, self.calls = ms
        self.flops, self.bytes, self.ratio, self.baseline, self.note = flops, nbytes, ratio, baseline, note
        self.tokens = tokens  # per call (> 0: a whole-model training update)

    @property
    def name(self):
        return self.case + "/" + self.label

    def tflops(self):
        return self.flops / (self.median_ms * 1e-3) / 1e12 if self.flops > 0 else 0.0

    def gbps(self):
        return self.bytes / (self.median_ms * 1e-3) / 1e9 if self.bytes > 0 else 0.0

    def tokens_per_s(self):
        return self.tokens / (self.median_ms * 1e-3) if self.tokens > 0 else 0.0


class Printer:
    def __init__(self, fmt, json_path, device):
        self.fmt, self.device = fmt, device
        self.json_file = open(json_path, "a") if json_path else None
        self.ceil_tflops = self.ceil_gbps = 0.0

    def fraction(self, r):
        if r.flops > 0 and self.ceil_tflops > 0:
            return r.tflops() / self.ceil_tflops
        if r.bytes > 0 and self.ceil_gbps > 0:
            return r.gbps() / self.ceil_gbps
        return 0.0

    def json(self, r):
        o = {"name": r.name, "case": r.case, "label": r.label, "shape": r.shape, "dtype": r.dtype,
             "device": self.device, "median_ms": r.median_ms, "min_ms": r.min_ms, "max_ms": r.max_ms,
             "calls": r.calls}
        if r.flops > 0:
            o.update(flops=r.flops, tflops=r.tflops())
        if r.bytes > 0:
            o.update(bytes=r.bytes, gbps=r.gbps())
        if r.tokens > 0:
            o.update(tokens=r.tokens, tokens_per_s=r.tokens_per_s())
        if self.fraction(r) > 0:
            o["ceiling_fraction"] = self.fraction(r)
        if r.ratio > 0:
            o.update(ratio=r.ratio, baseline=r.baseline)
        if r.note:
            o["note"] = r.note
        return json.dumps(o)

    def row(self, r):
        if self.fmt == "text":
            note = ("%.1fk tokens/s" % (r.tokens_per_s() / 1e3)) if r.tokens > 0 else ""
            if r.ratio > 0:
                note += ("; " if note else "") + "%.2fx %s" % (r.ratio, r.baseline)
            if r.note:
                note = note + "; " + r.note if note else r.note
            frac = self.fraction(r)
            print(FORMAT % (r.name, r.shape, r.dtype, "%.4f" % r.median_ms, "%.4f" % r.min_ms,
                            "%.2f" % r.tflops() if r.flops > 0 else "-", "%.1f" % r.gbps() if r.bytes > 0 else "-",
                            "%.1f" % (100 * frac) if frac > 0 else "-", note), flush=True)
        else:
            print(self.json(r), flush=True)
        if self.json_file:
            self.json_file.write(self.json(r) + "\n")
            self.json_file.flush()


def shape_text(*shapes):
    return " @ ".join("x".join(str(d) for d in s) for s in shapes)


# ----------------------------------------------------------------------------------------------------
# Timing

class Bench:
    def __init__(self, torch, args):
        self.torch, self.args = torch, args
        self.device = torch.device(args.device)
        self.cuda = self.device.type == "cuda"
        self.dtype = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}[args.dtype]
        self.dtype_name = args.dtype
        self.flush = torch.empty(256 << 20, dtype=torch.uint8, device=self.device) if self.cuda and not args.no_flush else None
        self.gen = torch.Generator(device=self.device)
        self.gen.manual_seed(1)

    def rand(self, *shape, dtype=None, lo=-1.0, hi=1.0, grad=False):
        t = torch_rand(self.torch, shape, self.gen, self.device, dtype or self.dtype, lo, hi)
        return t.requires_grad_(grad)

    def time(self, fn):
        torch, a = self.torch, self.args
        for _ in range(a.warmup):
            fn()
        if not self.cuda:
            ms = []
            for _ in range(a.repeat):
                t0 = time.perf_counter()
                fn()
                ms.append((time.perf_counter() - t0) * 1e3)
        else:
            torch.cuda.synchronize()
            starts = [torch.cuda.Event(enable_timing=True) for _ in range(a.repeat)]
            stops = [torch.cuda.Event(enable_timing=True) for _ in range(a.repeat)]
            for s, e in zip(starts, stops):
                if self.flush is not None:
                    self.flush.zero_()
                s.record()
                fn()
                e.record()
            torch.cuda.synchronize()
            ms = [s.elapsed_time(e) for s, e in zip(starts, stops)]
        return statistics.median(ms), min(ms), max(ms), len(ms)


def torch_rand(torch, shape, gen, device, dtype, lo, hi):
    t = torch.rand(*shape, generator=gen, device=device, dtype=torch.float32)
    return (t * (hi - lo) + lo).to(dtype)


# ----------------------------------------------------------------------------------------------------
# Cases (names and shapes as in lib/bench/*_cases.cpp, "full" scale)

def case_gemm(b, emit, m, k, n):
    x, w = b.rand(m, k), b.rand(k, n)
    c = b.torch.empty(m, n, dtype=b.dtype, device=b.device)
    emit("torch.matmul", shape_text((m, k), (k, n)), b.time(lambda: b.torch.matmul(x, w, out=c)),
         flops=2.0 * m * n * k)


def case_attention(b, emit, B, H, T, D, causal):
    F = b.torch.nn.functional
    q, k, v = (b.rand(B, H, T, D, grad=True) for _ in range(3))  # [B,H,T,D]: PyTorch's layout
    dout = b.rand(B, H, T, D)
    shape = "B%d H%d T%d D%d%s" % (B, H, T, D, " causal" if causal else "")
    fwd = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    out = fwd()
    bwd = lambda: b.torch.autograd.grad(out, (q, k, v), dout, retain_graph=True)

    def both():
        o = fwd()
        b.torch.autograd.grad(o, (q, k, v), dout)

    ff, bf = attention_flops(B, H, T, T, D, causal, False), attention_flops(B, H, T, T, D, causal, True)
    emit("fwd", shape, b.time(fwd), flops=ff, note="sdpa")
    emit("bwd", shape, b.time(bwd), flops=bf, note="sdpa")
    emit("fwd+bwd", shape, b.time(both), flops=ff + bf, note="sdpa")


def case_attention_decode(b, emit, B, H, T, D):
    # One beam-search step over a self-attention cache: reorder the cached keys and values by index_select
    # (fairseq's reorder_incremental_state), then SDPA with one query (lib/bench/attention_cases.cpp).
    F = b.torch.nn.functional
    q, k, v = b.rand(B, H, 1, D), b.rand(B, H, T, D), b.rand(B, H, T, D)
    order = b.torch.randint(0, B, (B,), generator=b.gen, device=b.device)
    step = lambda: F.scaled_dot_product_attention(q, k.index_select(0, order), v.index_select(0, order))
    emit("fwd", "B%d H%d Tk%d D%d" % (B, H, T, D), b.time(step), flops=attention_flops(B, H, 1, T, D, False, False),
         note="index_select+sdpa")


def case_layer_norm(b, emit, n=16384, d=512):
    torch, F = b.torch, b.torch.nn.functional
    x, dy = b.rand(n, d, grad=True), b.rand(n, d)
    g = b.rand(d, dtype=torch.float32, lo=0.5, hi=1.5, grad=True)
    beta = b.rand(d, dtype=torch.float32, grad=True)
    note = "f32 gamma/beta"
    try:
        y = F.layer_norm(x, (d,), g, beta, 1e-5)
    except RuntimeError:  # no mixed-dtype layer norm in this PyTorch: parameters in the activation dtype
        g, beta = (t.detach().to(b.dtype).requires_grad_() for t in (g, beta))
        y, note = F.layer_norm(x, (d,), g, beta, 1e-5), "gamma/beta " + b.dtype_name
    s, ps = x.element_size(), g.element_size()
    emit("fwd", shape_text((n, d)), b.time(lambda: F.layer_norm(x, (d,), g, beta, 1e-5)),
         nbytes=2 * n * d * s + 2 * d * ps + 2 * n * 4, note=note)
    emit("bwd", shape_text((n, d)), b.time(lambda: torch.autograd.grad(y, (x, g, beta), dy, retain_graph=True)),
         nbytes=3 * n * d * s + 3 * d * ps + 2 * n * 4, note=note)


def case_softmax(b, emit, n=16384, v=32000):
    torch = b.torch
    x, dy = b.rand(n, v, lo=-4, hi=4, grad=True), b.rand(n, v)
    s = x.element_size()
    y = torch.softmax(x, -1)
    emit("fwd", shape_text((n, v)), b.time(lambda: torch.softmax(x, -1)), nbytes=2 * n * v * s)
    emit("bwd", shape_text((n, v)), b.time(lambda: torch.autograd.grad(y, x, dy, retain_graph=True)),
         nbytes=3 * n * v * s)


def case_cross_entropy(b, emit, n=16384, v=32000):
    torch, F = b.torch, b.torch.nn.functional
    logits = b.rand(n, v, lo=-4, hi=4, grad=True)
    targets = torch.randint(0, v, (n,), generator=b.gen, device=b.device)
    dloss = b.rand(n, dtype=torch.float32, lo=0.5, hi=1.0)
    fwd = lambda: F.cross_entropy(logits, targets, reduction="none", label_smoothing=0.1)
    loss = fwd()
    dl = dloss.to(loss.dtype)
    s, rows = logits.element_size(), 4 * n + 2 * n * 4  # same minimal traffic as moe's fused op
    fb, bb = n * v * s + rows, 2 * n * v * s + rows
    emit("fwd", shape_text((n, v)), b.time(fwd), nbytes=fb, note="F.cross_entropy")
    emit("bwd", shape_text((n, v)), b.time(lambda: torch.autograd.grad(loss, logits, dl, retain_graph=True)),
         nbytes=bb, note="F.cross_entropy")

    def both():
        torch.autograd.grad(fwd(), logits, dl)

    emit("fwd+bwd", shape_text((n, v)), b.time(both), nbytes=fb + bb, note="F.cross_entropy")


def case_adam(b, emit, p=60_000_000):
    torch = b.torch
    param = torch.nn.Parameter(b.rand(p, dtype=torch.float32))
    param.grad = b.rand(p, dtype=torch.float32, lo=-1e-2, hi=1e-2)
    kw = {"fused": True} if b.cuda else {"foreach": False}
    opt = torch.optim.Adam([param], lr=1e-4, betas=(0.9, 0.98), eps=1e-9, **kw)
    opt.step()  # creates the moment buffers
    emit("step", shape_text((p,)), b.time(opt.step), nbytes=7 * 4 * p, dtype="f32",
         note="torch.optim.Adam(fused=True)" if b.cuda else "torch.optim.Adam")


def expert_offsets(experts, rows, skewed):
    """moe-bench's offsets (lib/bench/grouped_gemm_cases.cpp): even, or half the rows to expert 0, none to 1."""
    first = rows // 2 if skewed else rows // experts
    rest = experts - 2 if skewed else experts - 1
    return [0, first] + ([first] if skewed else []) + [first + e * (rows - first) // rest for e in range(1, rest + 1)]


def case_grouped_gemm(b, emit, experts, tokens=16384, d=512, h=2048, k=2, skewed=False):
    torch = b.torch
    rows = tokens * k
    off = expert_offsets(experts, rows, skewed)
    for name, fin, fout in (("up", d, h), ("down", h, d)):
        x, w = b.rand(rows, fin), b.rand(experts, fin, fout, lo=-0.1, hi=0.1)
        dout, wd = b.rand(rows, fout), b.rand(fin, fout, lo=-0.1, hi=0.1)
        y = torch.empty(rows, fout, dtype=b.dtype, device=b.device)
        dx, dw, dwd = torch.zeros_like(x), torch.zeros_like(w), torch.zeros_like(wd)
        flops = 2.0 * rows * fin * fout

        def loop_fwd():
            for e in range(experts):
                torch.matmul(x[off[e]:off[e + 1]], w[e], out=y[off[e]:off[e + 1]])

        def loop_bwd():
            for e in range(experts):
                s, t = off[e], off[e + 1]
                dx[s:t].addmm_(dout[s:t], w[e].t())
                dw[e].addmm_(x[s:t].t(), dout[s:t])

        def dense_bwd():
            dx.addmm_(dout, wd.t())
            dwd.addmm_(x.t(), dout)

        df = b.time(lambda: torch.matmul(x, wd, out=y))
        db = b.time(dense_bwd)
        emit(name + ".dense.fwd", shape_text((rows, fin), (fin, fout)), df, flops=flops)
        emit(name + ".dense.bwd", shape_text((rows, fin), (fin, fout)), db, flops=2 * flops)
        t = b.time(loop_fwd)
        emit(name + ".fwd", shape_text((rows, fin), (experts, fin, fout)), t, flops=flops,
             ratio=t[0] / df[0], baseline=name + ".dense.fwd", note="loop over experts")
        t = b.time(loop_bwd)
        emit(name + ".bwd", shape_text((rows, fin), (experts, fin, fout)), t, flops=2 * flops,
             ratio=t[0] / db[0], baseline=name + ".dense.bwd", note="loop over experts")


def layer_step(b, module, x, dy):
    """Forward + backward under bf16 autocast (f32 master parameters), as moe's mixed precision."""
    torch = b.torch
    amp = b.dtype != torch.float32

    def step():
        with torch.autocast(device_type=b.device.type, dtype=b.dtype) if amp else contextlib.nullcontext():
            y = module(x)
        torch.autograd.backward(y, dy.to(y.dtype))

    return b.time(step)


def make_moe_ffn(torch, d, h, experts, k, device):
    """Noisy top-k gating (Shazeer et al. 2017; W_g = W_noise = 0 as at initialisation) in f32, then the
    obvious loop over experts: gather the tokens routed to e, relu(x W1[e]) W2[e], scale by the gate,
    index_add back. Autoscale (h/d)^-1/2 as moe's experts. Auxiliary losses are not built."""
    nn = torch.nn

    class MoeFfn(nn.Module):
        def __init__(self):
            super().__init__()
            self.w_gate = nn.Parameter(torch.zeros(d, experts, device=device))
            self.w_noise = nn.Parameter(torch.zeros(d, experts, device=device))
            lim1, lim2 = math.sqrt(6 / (d + h)), math.sqrt(6 / (h + d))
            self.w1 = nn.Parameter(torch.empty(experts, d, h, device=device).uniform_(-lim1, lim1))
            self.w2 = nn.Parameter(torch.empty(experts, h, d, device=device).uniform_(-lim2, lim2))

        def forward(self, x):
            with torch.autocast(device_type=x.device.type, enabled=False):
                xf = x.float()
                clean = xf @ self.w_gate
                std = nn.functional.softplus(xf @ self.w_noise) + 0.01
                logits = clean + torch.randn_like(clean) * std
                top, idx = logits.topk(k, dim=-1)
                gates = torch.softmax(top, dim=-1)
            scale = (h / d) ** -0.5
            toks, outs = [], []
            for e in range(experts):
                tok, slot = (idx == e).nonzero(as_tuple=True)
                hid = torch.relu(x[tok] @ self.w1[e])
                outs.append(((hid @ self.w2[e]) * (gates[tok, slot, None] * scale).to(hid.dtype)).to(x.dtype))
                toks.append(tok)
            return torch.zeros_like(x).index_add(0, torch.cat(toks), torch.cat(outs))

    return MoeFfn()


def case_moe_ffn(b, emit, tokens=16384, d=512, h=2048, k=2):
    torch, nn = b.torch, b.torch.nn
    x, dy = b.rand(tokens, d, grad=True), b.rand(tokens, d)
    shape = shape_text((tokens, d))
    H = k * h
    dense = nn.Sequential(nn.Linear(d, H), nn.ReLU(), nn.Linear(H, d)).to(b.device)
    base = layer_step(b, dense, x, dy)
    emit("dense_ffn.h%d" % H, shape, base, flops=12.0 * tokens * d * H, note="nn.Linear, autocast")
    for experts in (8, 32):
        t = layer_step(b, make_moe_ffn(torch, d, h, experts, k, b.device), x, dy)
        emit("moe.e%d.k%d.h%d" % (experts, k, h), shape, t, flops=12.0 * tokens * k * d * h + 12.0 * tokens * d * experts,
             ratio=t[0] / base[0], baseline="dense_ffn.h%d" % H, note="loop over experts, autocast")


def make_mha(torch, d, heads, device):
    nn, F = torch.nn, torch.nn.functional

    class Mha(nn.Module):
        def __init__(self):
            super().__init__()
            self.q, self.k, self.v, self.o = (nn.Linear(d, d).to(device) for _ in range(4))

        def forward(self, x):
            B, T, _ = x.shape
            split = lambda t: t.view(B, T, heads, d // heads).transpose(1, 2)
            a = F.scaled_dot_product_attention(split(self.q(x)), split(self.k(x)), split(self.v(x)))
            return self.o(a.transpose(1, 2).reshape(B, T, d))

    return Mha()


def make_moa(torch, d, experts, k, D, device):
    """MoA (Zhang et al. 2022): a router picks k of E experts per token; expert e has its own query map
    Wq[e] [d,D] and output map Wo[e] [D,d], one shared key and value map [d,D]. The k selected queries
    attend as k heads over the one shared k/v head. Expert maps as a loop over experts with gather /
    scatter (nonzero, index, index_add). Router in f32; auxiliary losses not built."""
    nn, F = torch.nn, torch.nn.functional

    class Moa(nn.Module):
        def __init__(self):
            super().__init__()
            self.router = nn.Parameter(torch.empty(d, experts, device=device).uniform_(-0.01, 0.01))
            lim_q, lim_o = math.sqrt(6 / (d + D)), math.sqrt(6 / (D + d))
            self.wq = nn.Parameter(torch.empty(experts, d, D, device=device).uniform_(-lim_q, lim_q))
            self.wo = nn.Parameter(torch.empty(experts, D, d, device=device).uniform_(-lim_o, lim_o))
            self.k, self.v = nn.Linear(d, D, bias=False).to(device), nn.Linear(d, D, bias=False).to(device)

        def forward(self, x):
            B, T, _ = x.shape
            xf = x.reshape(B * T, d)
            with torch.autocast(device_type=x.device.type, enabled=False):
                probs = torch.softmax(xf.float() @ self.router, dim=-1)
                gates, idx = probs.topk(k, dim=-1)  # [N, k], descending
            routed = [(idx == e).nonzero(as_tuple=True) for e in range(experts)]
            toks, slots = torch.cat([t for t, _ in routed]), torch.cat([s for _, s in routed])
            qs = torch.cat([(xf[tok] @ self.wq[e]).to(xf.dtype) for e, (tok, _) in enumerate(routed)])
            q = xf.new_zeros(B * T, k, D).index_put((toks, slots), qs)
            q = q.view(B, T, k, D).transpose(1, 2)  # k query heads
            kk = self.k(x).unsqueeze(1).expand(B, k, T, D).contiguous()  # the one shared head, repeated
            vv = self.v(x).unsqueeze(1).expand(B, k, T, D).contiguous()
            o = F.scaled_dot_product_attention(q, kk, vv)  # scale 1/sqrt(D)
            o = o.transpose(1, 2).reshape(B * T, k, D)
            outs = []
            for e, (tok, slot) in enumerate(routed):
                out = o[tok, slot] @ self.wo[e]
                outs.append((out * gates[tok, slot, None].to(out.dtype)).to(xf.dtype))
            return xf.new_zeros(B * T, d).index_add(0, toks, torch.cat(outs)).view(B, T, d)

    return Moa()


def case_moa(b, emit, B=256, T=64, d=512, D=128, heads=8):
    x, dy = b.rand(B, T, d, grad=True), b.rand(B, T, d)
    n, shape = B * T, shape_text((B, T, d))
    base = layer_step(b, make_mha(b.torch, d, heads, b.device), x, dy)
    att = lambda H, hd: attention_flops(B, H, T, T, hd, False, False) + attention_flops(B, H, T, T, hd, False, True)
    emit("mha.h%d" % heads, shape, base, flops=3 * 4 * 2.0 * n * d * d + att(heads, d // heads),
         note="nn.Linear + sdpa, autocast")
    k = E = heads
    t = layer_step(b, make_moa(b.torch, d, E, k, D, b.device), x, dy)
    emit("moa.%dK%dE%dD" % (k, E, D), shape, t,
         flops=3 * 2.0 * n * D * d * (2 * k + 2) + 3 * 2.0 * n * d * E + att(k, D),
         ratio=t[0] / base[0], baseline="mha.h%d" % heads, note="loop over experts, autocast")


CASES = [
    ("gemm.ffn_up", lambda b, e: case_gemm(b, e, 16384, 512, 2048)),
    ("gemm.ffn_down", lambda b, e: case_gemm(b, e, 16384, 2048, 512)),
    ("gemm.vocab", lambda b, e: case_gemm(b, e, 16384, 512, 32000)),
    ("gemm.square", lambda b, e: case_gemm(b, e, 8192, 8192, 8192)),
    ("attention.base_causal", lambda b, e: case_attention(b, e, 64, 8, 512, 64, True)),
    ("attention.base", lambda b, e: case_attention(b, e, 64, 8, 512, 64, False)),
    ("attention.long_causal", lambda b, e: case_attention(b, e, 16, 16, 2048, 64, True)),
    ("attention.decode", lambda b, e: case_attention_decode(b, e, 320, 8, 64, 64)),
    ("attention.decode_long", lambda b, e: case_attention_decode(b, e, 5, 8, 2048, 64)),
    ("layer_norm", case_layer_norm),
    ("softmax", case_softmax),
    ("cross_entropy", case_cross_entropy),
    ("adam", case_adam),
    ("grouped_gemm.e8", lambda b, e: case_grouped_gemm(b, e, 8)),
    ("grouped_gemm.e32", lambda b, e: case_grouped_gemm(b, e, 32)),
    ("grouped_gemm.e64", lambda b, e: case_grouped_gemm(b, e, 64)),
    ("grouped_gemm.e8_skew", lambda b, e: case_grouped_gemm(b, e, 8, skewed=True)),
    ("layer.moe_ffn", case_moe_ffn),
    ("layer.moa", case_moa),
] + bench_torch_models.cases(attention_flops, make_moe_ffn)


def measure_ceilings(b, printer):
    torch = b.torch
    nbytes = 1 << 30
    src = b.rand(nbytes // 4, dtype=torch.float32)
    dst = torch.empty_like(src)
    copy = Row("ceiling", "copy", "1.00 GiB", "f32", b.time(lambda: dst.copy_(src)), nbytes=2.0 * nbytes,
               note="device-to-device copy, read + write")
    del src, dst
    n = 8192
    x, w = b.rand(n, n), b.rand(n, n)
    c = torch.empty(n, n, dtype=b.dtype, device=b.device)
    gemm = Row("ceiling", "gemm.torch", shape_text((n, n), (n, n)), b.dtype_name,
               b.time(lambda: torch.matmul(x, w, out=c)), flops=2.0 * n ** 3, note="torch.matmul, 2n^3 flops")
    printer.ceil_gbps, printer.ceil_tflops = copy.gbps(), gemm.tflops()
    printer.row(copy)
    printer.row(gemm)


def run(args):
    import torch  # only here: --compare needs no PyTorch

    b = Bench(torch, args)
    name = torch.cuda.get_device_name(b.device) + " (%s)" % args.device if b.cuda else "cpu"
    printer = Printer(args.format, args.json_out, name)
    if args.format == "text":
        print("# bench_torch on %s: torch %s, dtype %s, median of %d calls after %d warm-up calls%s" %
              (name, torch.__version__, args.dtype, args.repeat, args.warmup,
               ", CUDA events, L2 flushed before each call" if b.flush is not None else ""))
        print(FORMAT % ("name", "shape", "dtype", "median ms", "min ms", "TFLOP/s", "GB/s", "% ceil", "note"))
        print("-" * 130, flush=True)
    if not args.no_ceilings:
        measure_ceilings(b, printer)
    failures = 0
    pattern = re.compile(args.filter or ".*")
    for case, fn in CASES:
        if not pattern.search(case):
            continue

        def emit(label, shape, t, flops=0.0, nbytes=0.0, ratio=0.0, baseline="", note="", dtype=None, tokens=0.0):
            printer.row(Row(case, label, shape, dtype or b.dtype_name, t, flops, nbytes, ratio, baseline, note,
                            tokens))

        try:
            fn(b, emit)
        except Exception as e:  # report and go on, as moe-bench does
            failures += 1
            print("bench_torch: case %s failed: %s: %s" % (case, type(e).__name__, e), file=sys.stderr, flush=True)
            if args.format == "text":
                print("# %s FAILED: %s" % (case, e), flush=True)
        if b.cuda:
            torch.cuda.empty_cache()
    if args.format == "text":
        print("# ceilings measured in this run: compute %.1f TFLOP/s, bandwidth %.0f GB/s" %
              (printer.ceil_tflops, printer.ceil_gbps))
    return 1 if failures else 0


def compare(moe_path, torch_path):
    """moe-bench rows next to the bench_torch row of the same name; the GEMM rows (matmul, cublasLt) next
    to torch.matmul of their case and the GEMM ceiling next to torch's; whole-model rows (model.*) next to
    PyTorch eager and again next to torch.compile (".compile"), with both tokens/s. Rows without a partner
    are left out."""
    def load(path):
        rows = []
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    rows.append(json.loads(line))
        return rows

    moe, ref = load(moe_path), load(torch_path)
    by_name = {r["name"]: r for r in ref}
    fmt = "%-34s %-26s %11s %11s %10s  %s"
    print(fmt % ("name", "shape", "moe ms", "torch ms", "moe/torch", "note"))
    print("-" * 120)
    for r in moe:
        t = by_name.get(r["name"])
        if t is None and r["case"].startswith("gemm."):
            t = by_name.get(r["case"] + "/torch.matmul")
        if t is None and r["case"] == "ceiling":
            t = by_name.get("ceiling/gemm.torch") if r["label"].startswith("gemm.") else None
        partners = [(t, "")]
        if r["case"].startswith("model."):
            partners = [(t, "torch eager"), (by_name.get(r["name"] + ".compile"), "torch.compile")]
        for t, what in partners:
            if t is None:
                continue
            note = what
            if r.get("tokens_per_s") and t.get("tokens_per_s"):
                note += "; tokens/s: moe %.1fk, torch %.1fk" % (r["tokens_per_s"] / 1e3, t["tokens_per_s"] / 1e3)
            print(fmt % (r["name"], r["shape"], "%.4f" % r["median_ms"], "%.4f" % t["median_ms"],
                         "%.2f" % (r["median_ms"] / t["median_ms"]), note))
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", default="cuda", help="cuda (default), cuda:N or cpu")
    p.add_argument("--dtype", default="bf16", choices=["bf16", "f16", "f32"])
    p.add_argument("--filter", default="", help="run only cases whose name matches this regex")
    p.add_argument("--repeat", type=int, default=50, help="timed calls per kernel (median reported)")
    p.add_argument("--warmup", type=int, default=10, help="untimed calls before them")
    p.add_argument("--format", default="text", choices=["text", "json"])
    p.add_argument("--json-out", default="", help="also append the rows as JSON lines to this file")
    p.add_argument("--no-flush", action="store_true", help="do not zero a 256 MiB buffer before each timed call")
    p.add_argument("--no-ceilings", action="store_true", help="skip the copy and GEMM ceilings (no %% ceil column)")
    p.add_argument("--scale", default="full", choices=["full", "small", "tiny"],
                   help="shapes of the model.* cases (small, tiny: CPU smoke runs; the other cases are full size)")
    p.add_argument("--no-compile", action="store_true", help="model.* cases: no torch.compile rows")
    p.add_argument("--compare", nargs=2, metavar=("MOE_JSONL", "TORCH_JSONL"),
                   help="print moe-bench and bench_torch rows side by side and exit (no PyTorch needed)")
    args = p.parse_args()
    if args.compare:
        return compare(*args.compare)
    if args.repeat < 1 or args.warmup < 0:
        p.error("--repeat must be >= 1 and --warmup >= 0")
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
