#!/usr/bin/env bash
# The README's main command: Multi30k English->German from nothing to a BLEU score.
#   scripts/demo.sh [--cpu-minutes N] [--out DIR]
# 1. installs dependencies and builds if needed; 2. prepares Multi30k (from $MOE_DATA/multi30k or
# ../shared/data/multi30k when present, else downloaded); 3. trains: the full recipe
# (recipes/multi30k-en-de.yml) on a GPU, a small model for a few minutes on a CPU; 4. translates the
# test set (test_2016_flickr) with beam 5; 5. prints sacreBLEU-compatible BLEU.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT="$ROOT/runs/demo"; CPU_MINUTES=5
while (( $# )); do
  case "$1" in
    --out) OUT="$2"; shift 2 ;;
    --cpu-minutes) CPU_MINUTES="$2"; shift 2 ;;
    -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "demo.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
  esac
done
BIN="$ROOT/build/bin"
if [[ ! -x "$BIN/moe-train" || ! -x "$BIN/moe-translate" ]]; then
  "$ROOT/scripts/install-deps.sh"
  if ! command -v nvcc >/dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then export PATH="/usr/local/cuda/bin:$PATH"; fi
  cmake -S "$ROOT" -B "$ROOT/build" -DCMAKE_BUILD_TYPE=Release -DMOE_TESTS=OFF
  cmake --build "$ROOT/build" -j "$(nproc)"
fi

DATA="$OUT/data"
if [[ ! -f "$DATA/vocab.spm" ]]; then
  FROM=()
  for d in "${MOE_DATA:-}" "$ROOT/../shared/data"; do
    [[ -n "$d" && -f "$d/multi30k/train.en" ]] && { FROM=(--from "$d/multi30k"); break; }
  done
  "$ROOT/data-prep/multi30k.sh" --out "$DATA" --moe-vocab "$BIN/moe-vocab" "${FROM[@]}"
fi

RUN="$OUT/run"
COMMON=(--config "$ROOT/recipes/multi30k-en-de.yml" --run_dir "$RUN"
        --data.train.src "$DATA/train.src" --data.train.tgt "$DATA/train.tgt"
        --data.valid.src "$DATA/valid.src" --data.valid.tgt "$DATA/valid.tgt"
        --data.vocab.src "$DATA/vocab.spm" --data.vocab.tgt "$DATA/vocab.spm")
if "$BIN/moe-bench" --has-gpu >/dev/null 2>&1; then
  echo "demo: training the full recipe on the GPU"
  "$BIN/moe-train" "${COMMON[@]}"
else
  echo "demo: no GPU: training a small model on the CPU for about $CPU_MINUTES minutes"
  "$BIN/moe-train" "${COMMON[@]}" --train.device cpu --train.dtype f32 --model.d_model 256 --model.ffn_dim 1024 \
    --model.heads 4 --model.enc_layers 3 --model.dec_layers 3 --model.dropout 0.1 --train.max_tokens 4000 \
    --train.warmup_updates 200 --train.max_minutes "$CPU_MINUTES" --train.valid_every 100000
fi

"$BIN/moe-translate" -m "$RUN/checkpoint.last.safetensors" --beam 5 -i "$DATA/test.src" -o "$OUT/test.hyp"
echo "demo: BLEU of $OUT/test.hyp against $DATA/test.tgt (test_2016_flickr):"
"$BIN/moe-score" bleu -r "$DATA/test.tgt" -i "$OUT/test.hyp"
