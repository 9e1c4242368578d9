#!/usr/bin/env python3
"""PyTorch side of scripts/bench-cpu.sh: the moe demo Transformer trained and decoded on the CPU.

    python3 scripts/bench_cpu_torch.py train --src train.src.ids --tgt train.tgt.ids --vocab 8000 \
        [--d 256 --ffn 1024 --heads 4 --layers 3] [--max-tokens 4000] [--updates 30] [--warmup 5] [--threads N]
    python3 scripts/bench_cpu_torch.py decode --checkpoint moe.safetensors --src test.src.ids \
        [--beam 5] [--max-tokens 2000] [--threads N] [--out hyp.ids]

The model is moe's (lib/models/transformer.cpp) written out in eager PyTorch: embeddings scaled by
sqrt(d) plus sinusoidal positions, pre-norm blocks x + dropout(f(layer_norm(x))), ReLU FFN, a final
layer norm per stack, one embedding table shared by source, target and output, dropout 0.1, label
smoothing 0.1 on the summed cross-entropy divided by target tokens, Adam (0.9, 0.98, eps 1e-8).
Batches are moe-train's own, in its order (scripts/moe_batches.py: windows of shuffled sentences sorted by
length, packed so that sentences x (longest + 1) <= max tokens on each side, seed 1). "train" prints target
tokens/s over --updates timed updates after --warmup untimed ones. "decode" loads a moe checkpoint (safetensors, weights
stored [in, out]) and translates with a key/value cache (self-attention keys/values appended per step,
encoder output and cross-attention keys/values computed once), batched by source length like
moe-translate, beam search with finished hypotheses kept aside, length penalty and max length as
moe's defaults; prints seconds. The ids files come from `moe-vocab encode`. Not run by any test
(needs PyTorch); scripts/bench-cpu.sh is the user of both modes.
"""
import argparse
import json
import math
import struct
import sys
import time

import torch
import torch.nn.functional as F

from moe_batches import moe_batches, read_ids

PAD, UNK, BOS, EOS = 0, 1, 2, 3


def sinusoidal(t, d, offset=0):
    """moe's sinusoidal_positions (lib/layers/basic.cpp, fairseq's layout): sin in the first half, cos in the second."""
    half = d // 2
    step = math.log(10000.0) / (half - 1) if half > 1 else 0.0
    ang = torch.arange(offset, offset + t, dtype=torch.float64)[:, None] * torch.exp(
        -step * torch.arange(half, dtype=torch.float64))[None, :]
    pe = torch.zeros(t, d, dtype=torch.float64)
    pe[:, :half], pe[:, half:2 * half] = torch.sin(ang), torch.cos(ang)
    return pe.float()


class Attention(torch.nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.h = heads
        self.q, self.k, self.v, self.o = (torch.nn.Linear(d, d) for _ in range(4))

    def split(self, x):
        b, t, d = x.shape
        return x.view(b, t, self.h, d // self.h).transpose(1, 2)

    def forward(self, x, mem, mask, causal=False, cache=None, static_kv=False):
        q = self.split(self.q(x))
        if cache is not None and static_kv and "k" in cache:
            k, v = cache["k"], cache["v"]
        else:
            k, v = self.split(self.k(mem)), self.split(self.v(mem))
            if cache is not None and not static_kv and "k" in cache:
                k, v = torch.cat([cache["k"], k], 2), torch.cat([cache["v"], v], 2)
            if cache is not None:
                cache["k"], cache["v"] = k, v
        s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
        if mask is not None:
            s = s.masked_fill(mask, float("-inf"))
        if causal:
            tq, tk = s.shape[-2], s.shape[-1]
            s = s.masked_fill(torch.ones(tq, tk, dtype=torch.bool).triu(tk - tq + 1), float("-inf"))
        y = torch.matmul(torch.softmax(s, -1), v)
        b, h, t, dh = y.shape
        return self.o(y.transpose(1, 2).reshape(b, t, h * dh))


class Block(torch.nn.Module):
    def __init__(self, d, ffn, heads, cross):
        super().__init__()
        self.ln1, self.att = torch.nn.LayerNorm(d), Attention(d, heads)
        self.cross = cross
        if cross:
            self.ln_c, self.catt = torch.nn.LayerNorm(d), Attention(d, heads)
        self.ln2, self.w1, self.w2 = torch.nn.LayerNorm(d), torch.nn.Linear(d, ffn), torch.nn.Linear(ffn, d)

    def forward(self, x, p, self_mask, causal, mem=None, mem_mask=None, cache=None):
        h = self.ln1(x)
        x = x + F.dropout(self.att(h, h, self_mask, causal, None if cache is None else cache[0]), p, self.training)
        if self.cross:
            h = self.ln_c(x)
            x = x + F.dropout(self.catt(h, mem, mem_mask, False, None if cache is None else cache[1], True),
                              p, self.training)
        x = x + F.dropout(self.w2(F.relu(self.w1(self.ln2(x)))), p, self.training)
        return x


class Transformer(torch.nn.Module):
    def __init__(self, vocab, d, ffn, heads, enc_layers, dec_layers, dropout):
        super().__init__()
        self.d, self.p = d, dropout
        self.emb = torch.nn.Embedding(vocab, d)
        torch.nn.init.normal_(self.emb.weight, 0, d ** -0.5)
        self.enc = torch.nn.ModuleList(Block(d, ffn, heads, False) for _ in range(enc_layers))
        self.dec = torch.nn.ModuleList(Block(d, ffn, heads, True) for _ in range(dec_layers))
        self.enc_ln, self.dec_ln = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)

    def embed(self, ids, offset=0):
        x = self.emb(ids) * math.sqrt(self.d) + sinusoidal(ids.shape[1], self.d, offset)
        return F.dropout(x, self.p, self.training)

    def encode(self, src):
        mask = (src == PAD)[:, None, None, :]
        x = self.embed(src)
        for layer in self.enc:
            x = layer(x, self.p, mask, False)
        return self.enc_ln(x), mask

    def decode(self, tgt_in, mem, mem_mask, offset=0, caches=None):
        x = self.embed(tgt_in, offset)
        for i, layer in enumerate(self.dec):
            x = layer(x, self.p, None, True, mem, mem_mask, None if caches is None else caches[i])
        return F.linear(self.dec_ln(x), self.emb.weight)


def pad(rows):
    t = max(len(r) for r in rows)
    return torch.tensor([r + [PAD] * (t - len(r)) for r in rows], dtype=torch.long)


def train(a):
    torch.manual_seed(1)
    src, tgt = read_ids(a.src), read_ids(a.tgt)
    model = Transformer(a.vocab, a.d, a.ffn, a.heads, a.layers, a.layers, 0.1)
    opt = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-8)
    model.train()
    batches = moe_batches(src, tgt, a.max_tokens, 1)  # moe-train's batches, in its order (train.seed 1)
    total = a.warmup + a.updates
    tokens, t0 = 0, None
    for n in range(total):
        if n == a.warmup:
            t0, tokens = time.perf_counter(), 0
        ids = next(batches)
        s = pad([src[i] + [EOS] for i in ids])
        y_in, y_out = pad([[BOS] + tgt[i] for i in ids]), pad([tgt[i] + [EOS] for i in ids])
        opt.zero_grad(set_to_none=True)
        mem, mask = model.encode(s)
        logits = model.decode(y_in, mem, mask)
        n_tok = int((y_out != PAD).sum())
        loss = F.cross_entropy(logits.view(-1, a.vocab), y_out.view(-1), ignore_index=PAD, reduction="sum",
                               label_smoothing=0.1)
        (loss / n_tok).backward()
        opt.step()
        tokens += n_tok
    sec = time.perf_counter() - t0
    print(json.dumps({"side": "torch", "work": "train", "threads": torch.get_num_threads(), "updates": a.updates,
                      "tokens": tokens, "seconds": round(sec, 3), "tokens_per_s": round(tokens / sec, 1)}))


# ----------------------------------------------------------------------------------------------------
# Decoding with a moe checkpoint

def load_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    kinds = {"F32": torch.float32, "F64": torch.float64, "BF16": torch.bfloat16, "F16": torch.float16,
             "I64": torch.int64, "I32": torch.int32}
    for name, h in header.items():
        if name == "__metadata__" or h["dtype"] not in kinds:
            continue
        lo, hi = h["data_offsets"]
        out[name] = torch.frombuffer(bytearray(data[lo:hi]), dtype=kinds[h["dtype"]]).reshape(h["shape"]).float() \
            if hi > lo else torch.zeros(h["shape"])
    return out, header.get("__metadata__", {})


def reorder(caches, mem, mask, rows):
    for self_c, cross_c in caches:
        for c in (self_c, cross_c):
            if "k" in c:
                c["k"], c["v"] = c["k"][rows], c["v"][rows]
    return mem[rows], mask[rows]


def beam_search(model, src, beam, max_len, lenpen):
    """moe's beam search (lib/translator/beam_search.h, fairseq semantics): per step the top 2*beam
    candidates of each sentence from its [beam * V] scores, </s> among the first `beam` finalised,
    the best `beam` others kept; a sentence leaves the batch (its cache rows dropped) once it has
    `beam` finished hypotheses or reached max_len. Score = log-prob / len^lenpen (len with </s>)."""
    n = src.shape[0]
    mem, mask = model.encode(src)
    caches = [({}, {}) for _ in model.dec]
    active = list(range(n))       # sentence of each group of rows
    rows_per = 1                  # rows per active sentence (1 at the first step, beam after)
    scores = torch.zeros(n)
    tokens = torch.full((n, 1), BOS, dtype=torch.long)
    finished = [[] for _ in range(n)]
    step = 0
    while active:
        lp = torch.log_softmax(model.decode(tokens[:, -1:], mem, mask, step, caches)[:, -1].float(), -1)
        lp[:, PAD] = float("-inf")
        if step == 0:  # min length 1
            lp[:, EOS] = float("-inf")
        if step >= max_len:  # the last position: only </s>
            keep = lp[:, EOS].clone()
            lp.fill_(float("-inf"))
            lp[:, EOS] = keep
        V = lp.shape[1]
        cand = (scores[:, None] + lp).view(len(active), rows_per * V)
        top, idx = cand.topk(min(2 * beam, cand.shape[1]), -1)
        top, idx = top.tolist(), idx.tolist()
        keep_rows, keep_tok, keep_score, still = [], [], [], []
        for g, sent in enumerate(active):
            chosen = []
            for r, (sc, ix) in enumerate(zip(top[g], idx[g])):
                row, tok = g * rows_per + ix // V, ix % V
                if tok == EOS:
                    if r < beam and len(finished[sent]) < beam:
                        finished[sent].append((sc / (step + 1) ** lenpen, tokens[row, 1:].tolist()))
                elif len(chosen) < beam:
                    chosen.append((row, tok, sc))
            if len(finished[sent]) >= beam or step >= max_len or not chosen:
                continue
            still.append(sent)
            for row, tok, sc in chosen[:beam]:
                keep_rows.append(row)
                keep_tok.append(tok)
                keep_score.append(sc)
            while len(keep_rows) % beam:  # fewer than beam live candidates: pad with a dead row
                keep_rows.append(chosen[0][0])
                keep_tok.append(PAD)
                keep_score.append(float("-inf"))
        if not still:
            break
        rows = torch.tensor(keep_rows)
        mem, mask = reorder(caches, mem, mask, rows)
        tokens = torch.cat([tokens[rows], torch.tensor(keep_tok)[:, None]], 1)
        scores = torch.tensor(keep_score)
        active, rows_per, step = still, beam, step + 1
    return [max(f)[1] if f else [] for f in finished]


def load_model(path):
    """A moe Transformer checkpoint (names as lib/models/transformer.cpp gives them) as our Transformer."""
    w, meta = load_safetensors(path)
    cfg = {}
    for line in meta.get("moe.model", "").splitlines():
        k, _, v = line.partition(":")
        cfg[k.strip()] = v.strip()
    for key, want in (("type", "transformer"), ("pre_norm", "true"), ("tie_embeddings", "all"), ("activation", "relu")):
        if cfg.get(key) != want:
            raise SystemExit("%s: model.%s is %r; this reference needs %r" % (path, key, cfg.get(key), want))
    if cfg.get("attention", "~") not in ("~", "", "{}") or cfg.get("ffn", "~") not in ("~", "", "{}"):
        raise SystemExit("%s: only dense attention and FFN are written out here" % path)
    d, heads = int(cfg["d_model"]), int(cfg["heads"])
    model = Transformer(int(cfg["src_vocab"]), d, int(cfg["ffn_dim"]), heads, int(cfg["enc_layers"]),
                        int(cfg["dec_layers"]), 0.0)
    state = {"emb.weight": w["embed.shared"], "enc_ln.weight": w["encoder.final_ln.g"],
             "enc_ln.bias": w["encoder.final_ln.b"], "dec_ln.weight": w["decoder.final_ln.g"],
             "dec_ln.bias": w["decoder.final_ln.b"]}
    for side, layers, ours in (("encoder", int(cfg["enc_layers"]), "enc"), ("decoder", int(cfg["dec_layers"]), "dec")):
        for i in range(layers):
            src, dst = "%s.l%d." % (side, i), "%s.%d." % (ours, i)
            atts = [("self_attn", "att", "ln1")] + ([("cross_attn", "catt", "ln_c")] if side == "decoder" else [])
            for name, att, ln in atts:
                state[dst + ln + ".weight"], state[dst + ln + ".bias"] = w[src + name + ".ln.g"], w[src + name + ".ln.b"]
                for x in "qkvo":  # moe stores [in, out], torch.nn.Linear [out, in]
                    state[dst + att + "." + x + ".weight"] = w[src + name + "." + x + ".w"].t().contiguous()
                    state[dst + att + "." + x + ".bias"] = w[src + name + "." + x + ".b"]
            state[dst + "ln2.weight"], state[dst + "ln2.bias"] = w[src + "ffn.ln.g"], w[src + "ffn.ln.b"]
            for x, y in (("w1", "fc1"), ("w2", "fc2")):
                state[dst + x + ".weight"] = w[src + "ffn." + y + ".w"].t().contiguous()
                state[dst + x + ".bias"] = w[src + "ffn." + y + ".b"]
    model.load_state_dict(state)
    return model, int(cfg.get("max_positions", 1024))


def decode(a):
    model, max_positions = load_model(a.checkpoint)
    model.eval()
    src = read_ids(a.src)
    order = sorted(range(len(src)), key=lambda i: len(src[i]))  # batches by source length, as moe-translate
    out = [None] * len(src)
    t0 = time.perf_counter()
    i = 0
    while i < len(order):
        j, longest = i, 0
        while j < len(order) and max(longest, len(src[order[j]]) + 1) * (j - i + 1) <= a.max_tokens:
            longest = max(longest, len(src[order[j]]) + 1)
            j += 1
        j = max(j, i + 1)
        batch = [order[k] for k in range(i, j)]
        hyps = beam_search(model, pad([src[k] + [EOS] for k in batch]), a.beam, min(200, max_positions - 1), 1.0)
        for k, h in zip(batch, hyps):
            out[k] = h
        i = j
    sec = time.perf_counter() - t0
    if a.out:
        with open(a.out, "w") as f:
            for h in out:
                f.write(" ".join(map(str, h)) + "\n")
    print(json.dumps({"side": "torch", "work": "decode", "beam": a.beam, "threads": torch.get_num_threads(),
                      "sentences": len(src), "seconds": round(sec, 3)}))


def summary(a):
    """Per (work, model or beam, threads): each side's median, min-max over the runs, cores used ((user + sys) /
    wall), peak RSS, BLEU and load; then speed ratios (> 1: moe faster) at equal cores and best against best."""
    import statistics
    rows = [json.loads(l) for l in open(a.src) if l.strip()]
    for r in rows:
        if r["work"] == "machine":
            print("machine: %s; moe: %s; PyTorch: %s; CTranslate2: %s" % (r["cpu"], json.dumps(r["moe"]), r["torch_blas"],
                                                                         r["ct2_blas"]))
        if r["work"] == "size":
            print("size on disk, %s: f32 %.1f MiB, int8 %.1f MiB" % (r["side"], r["f32_mib"], r["int8_mib"]))
    groups = {}
    for r in rows:
        if r["work"] in ("size", "machine"):
            continue
        side = "moe-f32" if (r["side"] == "moe" and r["work"] == "decode") else r["side"]
        groups.setdefault((r["work"], str(r.get("model", r.get("beam"))), r["threads"]), {}).setdefault(side, []).append(r)
    print("%-6s %-5s %-3s %-9s %9s %17s %6s %7s %8s %6s %5s" % ("work", "case", "thr", "side", "median", "min-max", "cores",
                                                                 "CPU s", "RSS MiB", "BLEU", "load"))
    cpu = {}
    med = {}
    for (work, case, t), sides in sorted(groups.items()):
        field = "tokens_per_s" if work == "train" else "seconds"
        for side, xs in sorted(sides.items()):
            v = [x[field] for x in xs]
            m = statistics.median(v)
            med[(work, case, t, side)] = m
            cores = statistics.median(x["cores_used"] for x in xs) if all("cores_used" in x for x in xs) else float("nan")
            rss = statistics.median(x.get("max_rss_mib", float("nan")) for x in xs)
            bleu = statistics.median(x.get("bleu", float("nan")) for x in xs)
            load = max(x.get("load1", float("nan")) for x in xs)
            # CPU seconds (user + system) of the whole process: what a loaded machine changes least
            c = statistics.median(x.get("user", float("nan")) + x.get("system", float("nan")) for x in xs)
            cpu[(work, case, t, side)] = c
            print("%-6s %-5s %-3s %-9s %9.2f %8.2f-%-8.2f %6.2f %7.2f %8.0f %6.2f %5.2f" % (
                work, case, t, side, m, min(v), max(v), cores, c, rss, bleu, load))
    pairs = [("moe", "torch"), ("moe-f32", "torch"), ("moe-f32", "ct2-f32"), ("moe-int8", "ct2-int8"), ("moe-int8", "moe-f32")]
    print("speed ratios at equal cores (> 1: the first is faster):")
    keys = sorted({k[:3] for k in med})
    for work, case, t in keys:
        for x, y in pairs:
            if (work, case, t, x) in med and (work, case, t, y) in med:
                mx, my = med[(work, case, t, x)], med[(work, case, t, y)]
                cx, cy = cpu[(work, case, t, x)], cpu[(work, case, t, y)]
                print("  %s %s threads %s: %s / %s %.2fx (CPU seconds %.2fx)" % (
                    work, case, t, x, y, mx / my if work == "train" else my / mx, cy / cx))
    print("best thread setting of each side:")
    for work, case in sorted({k[:2] for k in med}):
        best = {}
        for (w, c, t, side), m in med.items():
            if (w, c) == (work, case) and (side not in best or (m > best[side] if work == "train" else m < best[side])):
                best[side] = m
        for x, y in pairs:
            if x in best and y in best:
                print("  %s %s: %s / %s %.2fx" % (work, case, x, y, best[x] / best[y] if work == "train" else best[y] / best[x]))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("mode", choices=["train", "decode", "summary"])
    p.add_argument("--src", required=True, help="ids file (summary: results.jsonl)")
    p.add_argument("--tgt")
    p.add_argument("--vocab", type=int, default=8000)
    p.add_argument("--d", type=int, default=256)
    p.add_argument("--ffn", type=int, default=1024)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--max-tokens", type=int, default=4000, help="train: batch budget; decode: source tokens per batch")
    p.add_argument("--updates", type=int, default=30)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: PyTorch's default)")
    p.add_argument("--checkpoint")
    p.add_argument("--beam", type=int, default=5)
    p.add_argument("--out")
    a = p.parse_args()
    if a.mode == "summary":
        return summary(a)
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    with torch.no_grad() if a.mode == "decode" else torch.enable_grad():
        (train if a.mode == "train" else decode)(a)


if __name__ == "__main__":
    sys.exit(main())
