#!/usr/bin/env python3
"""Rows and table of scripts/bench-e2e.sh (the end-to-end figures of docs/PERF.md).

  bench_e2e_summary.py row --name N --recipe R --device D --wall S --run DIR --checkpoint CK
                           [--bleu bleu.json --translate-log translate.log] [--ppl ppl.json]
      prints one JSON line: training (updates, seconds of the training loop, median tokens/s of the
      logged windows after the first, best validation), parameters (from the checkpoint's
      safetensors header, vocabularies excluded), and BLEU with decoding speed, or perplexity.
  bench_e2e_summary.py table results.jsonl
      prints the rows as a Markdown table.
Standard library only (runs where moe runs). Covered by tests/scripts/bench_e2e_smoke.sh.
"""
import argparse
import json
import re
import statistics
import struct
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path


def checkpoint_params(path):
    """Parameter count from a safetensors header; the embedded vocabularies (vocab.*) are not parameters."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    total = 0
    for name, t in header.items():
        if name == "__metadata__" or name.startswith("vocab."):
            continue
        size = 1
        for d in t["shape"]:
            size *= d
        total += size
    return total


def training_figures(run_dir):
    lines = [json.loads(l) for l in (Path(run_dir) / "metrics.jsonl").read_text().splitlines() if l.strip()]
    train = [l for l in lines if l.get("type") == "train"]
    valid = [l for l in lines if l.get("type") == "valid"]
    if not train:
        sys.exit(f"bench_e2e_summary: no training line in {run_dir}/metrics.jsonl")
    steady = train[1:] or train  # the first window holds start-up (allocator, first kernels)
    out = {
        "updates": train[-1]["update"],
        "epochs": train[-1]["epoch"],
        "train_tokens": sum(l["tokens"] for l in train),
        "train_tok_s": statistics.median(l["tokens_per_s"] for l in steady),
        "last_train_loss": train[-1]["loss"],
    }
    if valid:
        best = min(valid, key=lambda l: l["loss"])
        out.update(best_valid_loss=best["loss"], best_valid_ppl=best["ppl"], best_valid_update=best["update"])
    return out


def decode_figures(log):
    """The summary line of moe-translate: '... N target tokens in S s on DEV (...): W words/s, T tokens/s; loading took L s'."""
    text = Path(log).read_text()
    m = re.search(r"(\d+) target tokens in ([\d.e+-]+) s on (\S+) \(([^)]*)\): (\d+) words/s, (\d+) tokens/s; "
                  r"loading took ([\d.e+-]+) s", text)
    if not m:
        sys.exit(f"bench_e2e_summary: no moe-translate summary line in {log}")
    return {"decode_tgt_tokens": int(m[1]), "decode_s": float(m[2]), "decode_setting": m[4],
            "decode_tok_s": int(m[6]), "decode_load_s": float(m[7])}


def row(a):
    root = Path(__file__).resolve().parent.parent
    commit = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or "unknown"
    r = {"name": a.name, "recipe": a.recipe, "device": a.device, "commit": commit,
         "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%MZ"), "wall_s": a.wall,
         "checkpoint": Path(a.checkpoint).name, "params": checkpoint_params(a.checkpoint)}
    r.update(training_figures(a.run))
    if a.bleu:
        b = json.loads(Path(a.bleu).read_text())
        r.update(bleu=b["score"], bleu_signature=b["signature"])
        r.update(decode_figures(a.translate_log))
    if a.ppl:
        p = json.loads(Path(a.ppl).read_text())
        r.update(ppl=p["score"], ppl_context=p["context"], ppl_stride=p["stride"])
    print(json.dumps(r))


def table(path):
    rows = [json.loads(l) for l in Path(path).read_text().splitlines() if l.strip()]
    print("| run | params | moe-train wall s | updates / epochs | train tok/s (median) | best valid ppl "
          "| result | decode tok/s (beam 5) |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        result = f"BLEU {r['bleu']:.2f}" if "bleu" in r else f"ppl {r['ppl']:.2f} (ctx {r['ppl_context']}, " \
                                                             f"stride {r['ppl_stride']})" if "ppl" in r else "-"
        decode = f"{r['decode_tok_s']:,} ({r['decode_setting']})" if "decode_tok_s" in r else "-"
        valid = f"{r['best_valid_ppl']:.2f} (up. {r['best_valid_update']})" if "best_valid_ppl" in r else "-"
        print(f"| {r['name']} ({r['recipe']}, {r['checkpoint']}) | {r['params'] / 1e6:.1f}M | {r['wall_s']} "
              f"| {r['updates']} / {r['epochs']} | {r['train_tok_s']:,.0f} | {valid} | {result} | {decode} |")
    if rows:
        print(f"\n{rows[0]['date']}, device {rows[0]['device']}, commit {rows[0]['commit']}; BLEU on "
              f"test_2016_flickr ({rows[0].get('bleu_signature', '-')})")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("row")
    for k in ("--name", "--recipe", "--device", "--run", "--checkpoint"):
        r.add_argument(k, required=True)
    r.add_argument("--wall", type=int, required=True)
    r.add_argument("--bleu")
    r.add_argument("--translate-log")
    r.add_argument("--ppl")
    t = sub.add_parser("table")
    t.add_argument("path")
    a = ap.parse_args()
    if a.cmd == "row":
        row(a)
    else:
        table(a.path)


if __name__ == "__main__":
    main()
