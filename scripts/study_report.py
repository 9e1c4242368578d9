#!/usr/bin/env python3
"""docs/RESULTS.md from the cells of scripts/study.sh.

Per task a table of its models for each arm (equal updates, equal time): updates trained, validation
perplexity (the last validation of metrics.jsonl), test BLEU and chrF (translation), training tokens/s
(the train lines' tokens over their seconds), moe-train's wall seconds less validation, parameters total and active per
token (moe-train --dry-run); each figure the mean +- the sample standard deviation over the seeds that
ran (n given). Then the experts of each mixture model (seed 1, equal updates): mean gate entropy over
its sites against its maximum (ln k for top-k gates, else ln E), the load CV (routed pairs for top-k routers, else argmax choices),
the (token, slot) pairs a token capacity drops and the tokens no expert took (expert choice), and the
tokens of highest PMI for the first experts of the first site; and the figures, copied beside the file.
Readings written by hand live in readings.md of the figures' folder (docs/results/ for docs/RESULTS.md:
the output's name in lower case without .md) under '## mt', '## lm', '## lstm', '## gpu' and are inserted
below their task's tables; a section named otherwise ('## On a GPU') is appended at the end as it is. The GPU grid (task gpu) says under its heading how its arms were made. Covered by
tests/scripts/study_smoke.sh and, for the GPU grid, tests/scripts/gpu_check_rehearsal.sh.
"""
import argparse
import datetime
import json
import math
import os
import platform
import shutil
import subprocess
from pathlib import Path

TASKS = {
    "mt": "Translation: Multi30k En-De (test_2016_flickr, beam 5)",
    "lm": "Language model: WikiText-103 sample (10k-word vocabulary)",
    "lstm": "LSTM language models: One Billion Word sample (held-out shard, 5,500 / 575 sentences)",
    "gpu": "Translation on a GPU: Multi30k En-De at the full recipe's size (test_2016_flickr, beam 5)",
}
TRANSLATION = ("mt", "gpu")
CPU_ARMS = ("Equal time: each model trains the updates that take it the baseline's mean time (from the "
            "equal-updates arm), so its linear decay ends with the budget; the baseline's cells serve both arms.")


def gpu_arms(rows):
    """How the GPU grid's arms were made: the time budget and the baseline's updates in it, per seed."""
    budgets = sorted({c["budget_seconds"] for k, v in rows.items() if k[0] == "gpu" for c in v if "budget_seconds" in c})
    return (f"Equal time: every model trains {' / '.join(budgets) or '-'} s of moe-train's training loop "
            "(train.max_minutes; one validation, at the end). Equal updates: every model trains the updates the "
            "baseline made in that time, seed by seed; the baseline's cell serves both arms. Until the attention "
            "and expert kernels are as fast as the dense ones, the equal-time arm measures those kernels as much "
            "as the models.")
ARMS = {"updates": "equal updates", "time": "equal training time"}


def read_cell(cell: Path) -> dict:
    r = dict(line.rstrip("\n").split("\t", 1) for line in (cell / "result.tsv").open() if "\t" in line)
    metrics = cell / r["model"] / "metrics.jsonl"
    tokens = seconds = 0.0
    ppl = None
    for line in metrics.open():
        m = json.loads(line)
        if m["type"] == "train" and m.get("tokens_per_s"):
            tokens += m["tokens"]
            seconds += m["tokens"] / m["tokens_per_s"]
        elif m["type"] == "valid" and "ppl" in m:
            ppl = m["ppl"]
    r["valid_ppl"] = ppl
    r["tokens_per_s"] = tokens / seconds if seconds else None
    return r


def mean_sd(values):
    v = [float(x) for x in values if x not in (None, "")]
    if not v:
        return "-"
    mean = sum(v) / len(v)
    if len(v) == 1:
        return f"{mean:.2f} (n 1)"
    sd = math.sqrt(sum((x - mean) ** 2 for x in v) / (len(v) - 1))
    return f"{mean:.2f} ± {sd:.2f} (n {len(v)})"


def table(rows, task, arm, order):
    cols = ["model", "updates", "valid ppl"] + (["BLEU", "chrF"] if task in TRANSLATION else [])
    cols += ["tokens/s", "train s", "parameters"]  # train s: moe-train's wall time less its validation
    out = [f"| {' | '.join(cols)} |", "|" + "---|" * len(cols)]
    for model in order:
        cells = rows.get((task, model, arm)) or (rows.get((task, model, "updates")) if model == order[0] else None)
        if not cells:
            continue
        line = [model, " / ".join(sorted({c["updates"] for c in cells})), mean_sd(c["valid_ppl"] for c in cells)]
        if task in TRANSLATION:
            line += [mean_sd(c.get("bleu") for c in cells), mean_sd(c.get("chrf") for c in cells)]
        line += [mean_sd(c["tokens_per_s"] for c in cells), mean_sd(c["train_seconds"] for c in cells),
                 cells[0].get("parameters", "-") or "-"]
        out.append(f"| {' | '.join(line)} |")
    return "\n".join(out)


def dropped_cell(sites):
    """The mean over sites of a token capacity's dropped (token, slot) pairs (training's factor unless applied)
    and of the tokens no expert took; '-' where neither applies."""
    parts = []
    dropped = [s["dropped_fraction"] for s in sites if "dropped_fraction" in s]
    if dropped:
        parts.append(f"{100 * sum(dropped) / len(dropped):.1f}% at capacity {sites[0].get('capacity_factor', 0):g}")
    unrouted = [s["unrouted_fraction"] for s in sites if "unrouted_fraction" in s]
    if unrouted and sum(unrouted) > 0:
        parts.append(f"{100 * sum(unrouted) / len(unrouted):.1f}% of tokens")
    return "; ".join(parts) if parts else "-"


def expert_rows(cells_dir: Path, order):
    out = ["| model | sites | gate entropy (mean) | its maximum | load CV | dropped; no expert | "
           "tokens of highest PMI, first site, experts 0-2 |",
           "|---|---|---|---|---|---|---|"]
    for model in order:
        path = cells_dir / f"{model}-updates-s1" / "experts.jsonl"
        if not path.exists():
            continue
        sites = [json.loads(l) for l in path.open() if '"type":"site"' in l.replace(" ", "")]
        if not sites:
            continue
        ent = sum(s["entropy"] for s in sites) / len(sites)
        top = sum(s.get("max_entropy_k", s["max_entropy"]) for s in sites) / len(sites)  # ln k for top-k gates
        if all(abs(s["entropy"] - s.get("max_entropy_k", s["max_entropy"])) < 1e-6 for s in sites):
            # UNI-MAE: constant uniform weights, so every argmax is a tie and "load" and PMI mean nothing
            out.append(f"| {model} | {len(sites)} | {ent:.3f} | {top:.3f} | - | - | uniform gate by construction (no routing) |")
            continue
        cv = sum(s.get("routed_cv", s["argmax_cv"]) for s in sites) / len(sites)
        pmi = "; ".join(
            f"{e}: " + ", ".join(t["token"] for t in toks[:4]) for e, toks in enumerate(sites[0]["top_tokens"][:3]))
        out.append(f"| {model} | {len(sites)} | {ent:.3f} | {top:.3f} | {cv:.3f} | {dropped_cell(sites)} | {pmi} |")
    return "\n".join(out) if len(out) > 2 else ""


def readings(path: Path):
    if not path.exists():
        return {}
    parts, key = {}, None
    for line in path.open():
        if line.startswith("## "):
            key = line[3:].strip()
            parts[key] = ""
        elif key:
            parts[key] += line
    return {k: v.strip() for k, v in parts.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", required=True, type=Path)
    ap.add_argument("--grid", required=True, type=Path, help="lines 'task<TAB>models, baseline first'")
    ap.add_argument("--figures", required=True, type=Path)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--test-lines", type=int, default=0)
    ap.add_argument("--updates", default="")
    ap.add_argument("--command", default="scripts/study.sh")
    ap.add_argument("--title", default="Results: the papers' claims at small scale")
    a = ap.parse_args()

    grid = {t: m.split() for t, m in (line.rstrip("\n").split("\t", 1) for line in a.grid.open())}
    rows = {}
    for cell in sorted(a.cells.iterdir()):
        if (cell / "result.tsv").exists():
            r = read_cell(cell)
            rows.setdefault((r["task"], r["model"], r["arm"]), []).append(r)
    root = Path(__file__).resolve().parent.parent
    try:  # a GPU's copy of the tree may have no git
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip() or "unknown"
    except OSError:
        commit = "unknown"
    fig_dir = a.out.parent / a.out.stem.lower()
    notes = readings(fig_dir / "readings.md")
    load = os.getloadavg()
    doc = [f"# {a.title}", "",
           f"Generated by `scripts/study_report.py` from `{a.command}` on {datetime.date.today()}, commit {commit}, "
           f"{platform.node()} ({os.cpu_count()} CPUs, load {load[0]:.1f} when written); seeds {a.seeds}; "
           f"updates of the equal-updates arm: {a.updates}."
           + (f" **Smoke run: only the first {a.test_lines} test lines scored; not comparable.**" if a.test_lines else ""),
           "", "Each figure: mean ± sample standard deviation over the seeds (n)."
           + (" " + CPU_ARMS if any(k[0] != "gpu" for k in rows) else ""), ""]
    fig_dir.mkdir(parents=True, exist_ok=True)
    for task, title in TASKS.items():
        if not any(k[0] == task for k in rows):
            continue
        doc += [f"## {title}", ""] + ([gpu_arms(rows), ""] if task == "gpu" else [])
        for arm, arm_title in ARMS.items():
            if any(k[0] == task and k[2] == arm for k in rows):
                doc += [f"### {arm_title}", "", table(rows, task, arm, grid[task]), ""]
        experts = expert_rows(a.cells, grid[task])
        if experts:
            doc += ["### experts (seed 1, equal updates)", "", experts, ""]
        for svg in [a.figures / f"curves-{task}.svg"] + [a.figures / f"experts-{m}.svg" for m in grid[task]]:
            if not svg.exists():
                continue
            shutil.copy(svg, fig_dir / svg.name)
            doc += [f"![{svg.stem}]({fig_dir.name}/{svg.name})", ""]
        doc += ["### reading", "", notes.get(task, "_Not written yet._"), ""]
    for key, text in notes.items():
        if key not in TASKS:
            doc += [f"## {key}", "", text, ""]
    a.out.write_text("\n".join(doc))
    print(f"study_report: wrote {a.out} ({sum(len(v) for v in rows.values())} cells)")


if __name__ == "__main__":
    main()
