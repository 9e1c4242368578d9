#!/usr/bin/env bash
# scripts/moe_batches.py (the batch stream PyTorch trains on in scripts/bench-cpu.sh) against moe-train itself:
# the tiny recipe on 500 Multi30k pairs with 60-token batches (332 an epoch, in 3 windows) for 400
# updates, one metrics line per update; the real target tokens of every update must be those of the Python
# stream's batch, across windows and into the second epoch.
# Usage (ctest passes both): bench_batches.sh BIN_DIR SHARED_DATA_DIR. Exit 77 = skipped (no data).
set -euo pipefail
BIN="${1:?usage: bench_batches.sh BIN_DIR SHARED_DATA_DIR}"
DATA="${2:?usage: bench_batches.sh BIN_DIR SHARED_DATA_DIR}/multi30k"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
if [[ ! -f "$DATA/train.en" ]]; then echo "bench_batches: no Multi30k data in $DATA: skipped"; exit 77; fi
WORK="$(mktemp -d "${TMPDIR:-/tmp}/moe-batches.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
fail() { echo "bench_batches: $*" >&2; exit 1; }

head -n 500 "$DATA/train.en" > "$WORK/train.en"; head -n 500 "$DATA/train.de" > "$WORK/train.de"
UPDATES=400
"$BIN/moe-train" --config "$ROOT/recipes/ci-tiny.yml" --run_dir "$WORK/run" \
  --data.train.src "$WORK/train.en" --data.train.tgt "$WORK/train.de" \
  --data.vocab.src "$WORK/vocab.spm" --data.vocab.tgt "$WORK/vocab.spm" --data.vocab.size 500 \
  --model.d_model 16 --model.ffn_dim 16 --model.heads 2 --model.enc_layers 1 --model.dec_layers 1 \
  --train.max_tokens 60 --train.seed 7 --train.max_updates "$UPDATES" --train.log_every 1 \
  --train.valid_every 100000 --train.save_every 100000 > "$WORK/train.log" 2>&1 ||
  { tail -5 "$WORK/train.log" >&2; fail "moe-train"; }
for side in en de; do "$BIN/moe-vocab" encode --vocab "$WORK/vocab.spm" -i "$WORK/train.$side" -o "$WORK/$side.ids"; done
python3 -c 'import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r.get("type") == "train": print(r["tokens"])' "$WORK/run/metrics.jsonl" > "$WORK/moe.tokens"
python3 "$ROOT/scripts/moe_batches.py" --src "$WORK/en.ids" --tgt "$WORK/de.ids" --max-tokens 60 --seed 7 \
  --max-len 64 --count "$UPDATES" > "$WORK/py.tokens"
[[ "$(wc -l < "$WORK/moe.tokens")" -eq "$UPDATES" ]] || fail "moe-train logged $(wc -l < "$WORK/moe.tokens") updates"
if ! cmp -s "$WORK/moe.tokens" "$WORK/py.tokens"; then
  diff "$WORK/moe.tokens" "$WORK/py.tokens" | head -5 >&2
  fail "the Python batch stream differs from moe-train's (tokens per update above: moe < > Python)"
fi
grep -q "epoch 2\|\"epoch\":2" "$WORK/run/metrics.jsonl" || fail "the run did not reach the second epoch"
echo "bench_batches: $UPDATES updates, the same tokens in each"
