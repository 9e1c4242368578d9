"""PyTorch counterparts of moe-bench's whole-model cases (lib/bench/model_cases.cpp), for bench_torch.py.

Each timed call is one training update, as moe's time_update (lib/bench/model_step.h): gradients
cleared, the batch copied from pinned host memory to the device, the forward under bf16 autocast (f32
master parameters) ending in the summed (label-smoothed) cross-entropy, the backward of sum / target
tokens, one Adam step (fused=True on a GPU). Unlike moe, no host sync per update (no loss read-back,
no gradient norm): PyTorch as it runs fastest. Two rows per model: "update" (eager) and
"update.compile" (torch.compile of the module; its compilation happens in the warm-up calls).
Models, hand-written with F.scaled_dot_product_attention (fused q/k/v projections as
nn.MultiheadAttention; an unfused fallback only for PyTorch < 2.0 CPU smoke runs):
  model.transformer_base      6+6 post-norm, d 512, FFN 2048 ReLU, 8 heads, one 32k embedding shared by
                              source, target and output, sinusoidal positions, dropout 0.1 (embeddings and
                              residual branches), label smoothing 0.1; 256 pairs x 64 tokens per side.
  model.transformer_base_moe  the same with every FFN bench_torch's MoE FFN (top-2 of 8, loop over experts;
                              eager only: data-dependent routing).
  model.transformer_lm        6 pre-norm causal layers + a final norm, d 512, vocabulary 32489, tied
                              embeddings, dropout 0.3, Adam weight decay 0.01; 32 blocks of 256.
model_train_flops() is lib/bench/model_step.cpp's formula. --scale small / tiny shrink the shapes as
moe-bench's do (CPU smoke runs). Not imported by any test (needs PyTorch).
"""
import contextlib
import math

# batch, len, d, ffn, vocab, heads, layers per scale (as model_cases.cpp)
SIZES = {
    "translation": {"full": (256, 64, 512, 2048, 32000, 8, 6), "small": (16, 32, 128, 512, 2000, 4, 2),
                    "tiny": (2, 8, 16, 32, 64, 2, 1)},
    "lm": {"full": (32, 256, 512, 2048, 32489, 8, 6), "small": (8, 64, 128, 512, 2000, 4, 2),
           "tiny": (2, 8, 16, 32, 64, 2, 1)},
}
FIRST_WORD = 4  # ids 0-3 reserved (pad, unk, bos, eos)


def model_train_flops(attention_flops, batch, src_len, tgt_len, d, ffn, vocab, heads, enc_layers, dec_layers,
                      experts=0, k=0):
    """GEMMs 3 * 2 * multiply-adds (forward + backward) plus the attention cores; src_len 0 = decoder-only LM."""
    ns, nt = batch * src_len, batch * tgt_len
    f = k * 2 * d * ffn + 2 * d * experts if experts else 2 * d * ffn
    macs = enc_layers * ns * (4 * d * d + f)
    macs += dec_layers * (nt * (4 * d * d + f) + (nt * 2 * d * d + ns * 2 * d * d if src_len else 0))
    macs += nt * d * vocab
    dh = d // heads

    def att(tq, tk, causal):
        return (attention_flops(batch, heads, tq, tk, dh, causal, False) +
                attention_flops(batch, heads, tq, tk, dh, causal, True))

    attention = dec_layers * att(tgt_len, tgt_len, True)
    if src_len:
        attention += enc_layers * att(src_len, src_len, False) + dec_layers * att(tgt_len, src_len, False)
    return 6.0 * macs + attention


def define(torch):
    """The modules, defined once torch is imported."""
    nn, F = torch.nn, torch.nn.functional
    sdpa = getattr(F, "scaled_dot_product_attention", None)

    def attend(q, k, v, causal):
        if sdpa is not None:
            return sdpa(q, k, v, is_causal=causal)
        s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # PyTorch < 2.0: the same math, unfused
        if causal:
            s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool, device=s.device).triu(1), float("-inf"))
        return torch.softmax(s, -1) @ v

    class Attention(nn.Module):
        def __init__(self, d, heads, self_attention):
            super().__init__()
            self.heads, self.self_attention = heads, self_attention
            self.qkv = nn.Linear(d, 3 * d) if self_attention else None
            self.q, self.kv = (None, None) if self_attention else (nn.Linear(d, d), nn.Linear(d, 2 * d))
            self.o = nn.Linear(d, d)

        def forward(self, x, memory=None, causal=False):
            B, T, d = x.shape
            split = lambda t: t.view(B, -1, self.heads, d // self.heads).transpose(1, 2)
            if self.self_attention:
                q, k, v = self.qkv(x).chunk(3, dim=-1)
            else:
                q, (k, v) = self.q(x), self.kv(memory).chunk(2, dim=-1)
            a = attend(split(q), split(k), split(v), causal)
            return self.o(a.transpose(1, 2).reshape(B, T, d))

    class Ffn(nn.Module):
        def __init__(self, d, f, moe_ffn):
            super().__init__()
            self.moe = moe_ffn
            self.fc1, self.fc2 = (None, None) if moe_ffn is not None else (nn.Linear(d, f), nn.Linear(f, d))

        def forward(self, x):
            if self.moe is not None:
                return self.moe(x.reshape(-1, x.shape[-1])).view(x.shape)
            return self.fc2(F.relu(self.fc1(x)))

    class Layer(nn.Module):
        """Self-attention, optional cross-attention, FFN; residual blocks post-norm LN(x + drop(f(x))) or
        pre-norm x + drop(f(LN(x)))."""

        def __init__(self, d, f, heads, cross, pre_norm, p, moe_ffn):
            super().__init__()
            self.pre_norm, self.p = pre_norm, p
            self.self_attn, self.ln1 = Attention(d, heads, True), nn.LayerNorm(d)
            self.cross_attn = Attention(d, heads, False) if cross else None
            self.ln2 = nn.LayerNorm(d) if cross else None
            self.ffn, self.ln3 = Ffn(d, f, moe_ffn), nn.LayerNorm(d)

        def block(self, x, ln, f):
            if self.pre_norm:
                return x + F.dropout(f(ln(x)), self.p, self.training)
            return ln(x + F.dropout(f(x), self.p, self.training))

        def forward(self, x, memory=None, causal=False):
            x = self.block(x, self.ln1, lambda h: self.self_attn(h, causal=causal))
            if self.cross_attn is not None:
                x = self.block(x, self.ln2, lambda h: self.cross_attn(h, memory))
            return self.block(x, self.ln3, self.ffn)

    def sinusoids(n, d):
        pos = torch.arange(n, dtype=torch.float32)[:, None]
        inv = torch.exp(torch.arange(0, d, 2, dtype=torch.float32) * (-math.log(10000.0) / d))
        return torch.cat([torch.sin(pos * inv), torch.cos(pos * inv)], dim=1)

    class Net(nn.Module):
        """Encoder-decoder (enc_layers > 0) or decoder-only LM; one embedding tied everywhere; forward returns
        the summed cross-entropy of the targets."""

        def __init__(self, vocab, d, f, heads, enc_layers, dec_layers, pre_norm, p, smoothing, moe_ffn=None):
            super().__init__()
            self.d, self.p, self.pre_norm, self.smoothing = d, p, pre_norm, smoothing
            self.embed = nn.Embedding(vocab, d)
            nn.init.normal_(self.embed.weight, 0, d ** -0.5)
            self.register_buffer("positions", sinusoids(1024, d), persistent=False)
            make = lambda cross: Layer(d, f, heads, cross, pre_norm, p, moe_ffn() if moe_ffn else None)
            self.encoder = nn.ModuleList(make(False) for _ in range(enc_layers))
            self.decoder = nn.ModuleList(make(enc_layers > 0) for _ in range(dec_layers))
            self.final_ln = nn.LayerNorm(d) if pre_norm else None

        def embed_tokens(self, ids):
            x = self.embed(ids) * math.sqrt(self.d) + self.positions[: ids.shape[1]]
            return F.dropout(x, self.p, self.training)

        def forward(self, tgt_in, tgt_out, src=None):
            memory = None
            if src is not None:
                memory = self.embed_tokens(src)
                for layer in self.encoder:
                    memory = layer(memory)
            y = self.embed_tokens(tgt_in)
            for layer in self.decoder:
                y = layer(y, memory, causal=True)
            if self.final_ln is not None:
                y = self.final_ln(y)
            logits = F.linear(y.reshape(-1, self.d), self.embed.weight)
            return F.cross_entropy(logits, tgt_out.reshape(-1), reduction="sum", label_smoothing=self.smoothing)

    return Net


def time_updates(b, emit, model, host_batch, tokens, weight_decay, shape, flops, what, compile_too):
    """Times eager updates ("update") and, with compile_too, those of torch.compile(model) ("update.compile")."""
    torch = b.torch
    amp = b.dtype != torch.float32
    kw = {"fused": True} if b.cuda else {"foreach": False}
    opt = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-8, weight_decay=weight_decay, **kw)
    params = sum(p.numel() for p in model.parameters())
    count = "%.1fM" % (params / 1e6) if params >= 1e6 else "%.1fk" % (params / 1e3)  # as model_cases.cpp
    note = "%s params; %s; %s, %s" % (count, what, "autocast " + b.dtype_name if amp else b.dtype_name,
                                      "fused Adam" if b.cuda else "Adam")

    def updater(net):
        def update():
            opt.zero_grad(set_to_none=True)
            inputs = [t.to(b.device, non_blocking=True) for t in host_batch]
            with torch.autocast(device_type=b.device.type, dtype=b.dtype) if amp else contextlib.nullcontext():
                loss = net(*inputs)
            (loss / tokens).backward()
            opt.step()

        return update

    model.train()
    emit("update", shape, b.time(updater(model)), flops=flops, tokens=tokens, note=note + ", eager")
    if compile_too:
        emit("update.compile", shape, b.time(updater(torch.compile(model))), flops=flops, tokens=tokens,
             note=note + ", torch.compile")


def random_ids(torch, rows, length, vocab):
    return torch.randint(FIRST_WORD, vocab, (rows, length), generator=torch.Generator().manual_seed(7))


def pinned(b, tensors):
    """Contiguous host tensors, page-locked on a GPU run (so the per-update copy is asynchronous)."""
    return tuple(t.contiguous().pin_memory() if b.cuda else t.contiguous() for t in tensors)


def case_translation(b, emit, attention_flops, make_moe_ffn, experts=0, k=2):
    """src = x </s>, tgt_in = <s> y, tgt_out = y </s>: len tokens each, no padding."""
    torch = b.torch
    B, L, d, f, V, H, layers = SIZES["translation"][b.args.scale]
    moe = (lambda: make_moe_ffn(torch, d, f, experts, k, b.device)) if experts else None
    model = define(torch)(V, d, f, H, layers, layers, False, 0.1, 0.1, moe).to(b.device)
    src, tgt = random_ids(torch, B, L, V), random_ids(torch, B, L + 1, V)
    src[:, -1], tgt[:, 0], tgt[:, -1] = 3, 2, 3
    host_batch = pinned(b, (tgt[:, :-1], tgt[:, 1:], src))
    flops = model_train_flops(attention_flops, B, L, L, d, f, V, H, layers, layers, experts, k if experts else 0)
    what = "%d+%d post-norm, tied, dropout 0.1, ls 0.1%s" % (
        layers, layers, ", MoE FFN top-%d of %d (loop over experts)" % (k, experts) if experts else "")
    time_updates(b, emit, model, host_batch, B * L, 0.0, "%dx%d -> %dx%d" % (B, L, B, L), flops, what,
                 compile_too=not experts and not b.args.no_compile)


def case_lm(b, emit, attention_flops):
    """Blocks of a random stream: input x[t], target x[t+1]."""
    torch = b.torch
    B, L, d, f, V, H, layers = SIZES["lm"][b.args.scale]
    model = define(torch)(V, d, f, H, 0, layers, True, 0.3, 0.0).to(b.device)
    block = random_ids(torch, B, L + 1, V)
    host_batch = pinned(b, (block[:, :-1], block[:, 1:]))
    flops = model_train_flops(attention_flops, B, 0, L, d, f, V, H, 0, layers)
    time_updates(b, emit, model, host_batch, B * L, 0.01, "%dx%d" % (B, L), flops,
                 "%d-layer pre-norm, tied, dropout 0.3" % layers, compile_too=not b.args.no_compile)


def cases(attention_flops, make_moe_ffn):
    """(name, fn(bench, emit)) for bench_torch.py's table."""
    return [
        ("model.transformer_base", lambda b, e: case_translation(b, e, attention_flops, make_moe_ffn)),
        ("model.transformer_base_moe", lambda b, e: case_translation(b, e, attention_flops, make_moe_ffn, 8)),
        ("model.transformer_lm", lambda b, e: case_lm(b, e, attention_flops)),
    ]
