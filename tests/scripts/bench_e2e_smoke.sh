#!/usr/bin/env bash
# scripts/bench-e2e.sh (the end-to-end benchmark runner of docs/PERF.md) on the CPU with tiny models:
# a Multi30k translation run (prepared from the shared data, trained for a few seconds, the whole test
# set decoded with beam 5 and scored) and a WikiText-103 sample LM run (scored with moe-score ppl,
# context 256, stride 224). Checks that both rows land in results.jsonl with the figures the PERF.md
# table needs, that the hypotheses keep the test set's 1,000 lines, that the BLEU and perplexity in
# the rows equal the ones moe-score printed, and that results.md is the table of both rows.
# Usage (ctest passes both): bench_e2e_smoke.sh BIN_DIR SHARED_DATA_DIR. Exit 77 = skipped (no data).
set -euo pipefail
BIN="${1:?usage: bench_e2e_smoke.sh BIN_DIR SHARED_DATA_DIR}"
DATA="${2:?usage: bench_e2e_smoke.sh BIN_DIR SHARED_DATA_DIR}"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
E2E_NAME=bench_e2e_smoke
source "$(dirname "$0")/lib/e2e_common.sh"
for f in multi30k/train.en wikitext-103-sample/wiki.train.tokens; do
  [[ -f "$DATA/$f" || -f "$DATA/$f.gz" ]] || { echo "$E2E_NAME: no $DATA/$f: skipped"; exit 77; }
done
command -v python3 >/dev/null || e2e_fail "python3 is needed by scripts/bench_e2e_summary.py"
OUT="$(mktemp -d "${TMPDIR:-/tmp}/moe-bench-e2e.XXXXXX")"
trap 'rm -rf "$OUT"' EXIT

tiny=(--model.d_model 32 --model.ffn_dim 64 --model.heads 2 --model.dropout 0.1 --train.dtype f32
      --train.log_every 1 --train.valid_every 1000000 --train.save_every 1000000)
args=(--bin "$BIN" --data "$DATA" --device cpu --only base,lm --minutes 0.1 --lm-seconds 4
      --decode-arg --max-len-a --decode-arg 1.2 --decode-arg --max-len-b --decode-arg 5)
for a in "${tiny[@]}" --model.enc_layers 1 --model.dec_layers 1 --train.max_tokens 3000; do args+=(--mt-arg "$a"); done
for a in "${tiny[@]}" --model.layers 1 --train.max_tokens 2048; do args+=(--lm-arg "$a"); done
OMP_NUM_THREADS=2 bash "$ROOT/scripts/bench-e2e.sh" "$OUT" "${args[@]}" || e2e_fail "bench-e2e.sh"

[[ "$(wc -l < "$OUT/base/test.hyp")" -eq 1000 ]] || e2e_fail "test.hyp has $(wc -l < "$OUT/base/test.hyp") lines, not 1000"
[[ "$(wc -l < "$OUT/results.jsonl")" -eq 2 ]] || e2e_fail "results.jsonl should hold 2 rows"
python3 - "$OUT" <<'EOF' || e2e_fail "results.jsonl rows"
import json, sys
out = sys.argv[1]
rows = {r["name"]: r for r in map(json.loads, open(f"{out}/results.jsonl"))}
base, lm = rows["base"], rows["lm"]
for r in (base, lm):
    assert r["updates"] > 0 and r["train_tok_s"] > 0 and r["params"] > 0 and r["device"] == "cpu", r
assert base["bleu"] == json.load(open(f"{out}/base/bleu.json"))["score"], base
assert base["decode_tok_s"] > 0 and base["decode_tgt_tokens"] > 0 and "beam 5" in base["decode_setting"], base
assert lm["ppl"] == json.load(open(f"{out}/lm/ppl.json"))["score"] and lm["ppl"] > 1, lm
assert (lm["ppl_context"], lm["ppl_stride"]) == (256, 224), lm
EOF
grep -q '^| base (recipes/multi30k-en-de.yml' "$OUT/results.md" || e2e_fail "results.md has no base row"
grep -q '^| lm (recipes/wikitext103-sample-lm.yml' "$OUT/results.md" || e2e_fail "results.md has no lm row"
echo "$E2E_NAME: passed"
