#!/usr/bin/env python3
"""The bench step's figures for scripts/gpu-check.sh's summary, from moe-bench or bench_torch.py JSON lines:

    bench-figures.py moe|torch FILE.jsonl

prints one line: the measured ceilings (moe) and, per row, TFLOP/s or GB/s with the fraction of the
ceiling and the kernel variant that ran, or tokens/s for whole-model training updates. Exits 1 when the
file holds no rows.
Covered by the rehearsal (tests/scripts/gpu_check_rehearsal.sh).
"""
import json
import sys


def figure(row):
    if row.get("tokens_per_s"):
        return "%s %.0f tokens/s" % (row["name"], row["tokens_per_s"])
    rate = "%.3g TFLOP/s" % row["tflops"] if row.get("tflops") else "%.3g GB/s" % row.get("gbps", 0.0)
    frac = " (%.0f%% of the ceiling)" % (100 * row["ceiling_fraction"]) if row.get("ceiling_fraction") else ""
    kernel = " [%s]" % row["variant"] if row.get("variant") else ""
    return "%s %s%s%s" % (row["name"], rate, frac, kernel)


def main():
    kind, path = sys.argv[1], sys.argv[2]
    try:
        with open(path) as f:
            rows = [json.loads(line) for line in f if line.strip()]
    except OSError as e:
        print("%s: no rows (%s)" % (kind, e.strerror))
        return 1
    if not rows:
        print("%s: no rows" % kind)
        return 1
    parts = [figure(r) for r in rows if not r["name"].startswith("ceiling/") and (kind == "moe" or r.get("tokens_per_s"))]
    ceilings = [figure(r).split(" (")[0] for r in rows if r["name"].startswith("ceiling/")]
    head = "moe-bench" if kind == "moe" else "bench_torch.py"
    print("%s: %s%s" % (head, "ceilings " + ", ".join(ceilings) + "; " if ceilings else "", ", ".join(parts) or "no rows"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
