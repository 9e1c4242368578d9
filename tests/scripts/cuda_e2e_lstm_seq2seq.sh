#!/usr/bin/env bash
# The lstm_seq2seq model's CUDA path end to end, on a GPU or under the CUDA emulator (emu/): the MoE-32
# recipe (strictly balanced gating in training, thresholds at inference) at small sizes, trained for a
# few updates on the CPU and on cuda:0 from the same data and seed, logs the same losses (f32 within
# 2e-4 relative, bf16 within 3e-2); moe-translate --device cuda (beam 5, GNMT length penalty) writes the
# CPU's translations of 5 test verses from a checkpoint trained further on the CPU (200 updates), and
# moe-score pairs on cuda gives the CPU's log-probabilities (within 1e-3). Data: English-Spanish Bible verses.
# Usage (ctest passes both): cuda_e2e_lstm_seq2seq.sh BIN_DIR SHARED_DATA_DIR. Exit 77 = skipped: no CUDA
# device (a build without CUDA, or nvcc's build on a machine without a GPU) or no data.
set -euo pipefail
BIN="${1:?usage: cuda_e2e_lstm_seq2seq.sh BIN_DIR SHARED_DATA_DIR}"
DATA="${2:?usage: cuda_e2e_lstm_seq2seq.sh BIN_DIR SHARED_DATA_DIR}/bible-en-es"
RECIPE="$(cd "$(dirname "$0")/../.." && pwd)/recipes/wmt14-en-fr-moe-32.yml"
UPDATES="${CUDA_E2E_UPDATES:-4}"
E2E_NAME=cuda_e2e_lstm_seq2seq
source "$(dirname "$0")/lib/e2e_common.sh"
[[ -f "$DATA/bible.en" ]] || { echo "$E2E_NAME: no Bible pairs in $DATA: skipped"; exit 77; }
if ! "$BIN/moe-bench" --has-cuda; then echo "$E2E_NAME: no CUDA device (GPU or emulator): skipped"; exit 77; fi
WORK="$(mktemp -d "${TMPDIR:-/tmp}/moe-cuda-e2e-seq2seq.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

paste -d '\t' "$DATA/bible.en" "$DATA/bible.es" |
  awk -F '\t' 'NF == 2 && length($1) < 60 && length($2) < 60 && ++n <= 305' > "$WORK/pairs"
cut -f1 "$WORK/pairs" | head -n 300 > "$WORK/train.en"; cut -f2 "$WORK/pairs" | head -n 300 > "$WORK/train.es"
cut -f1 "$WORK/pairs" | tail -n 5 > "$WORK/test.en"; cut -f2 "$WORK/pairs" | tail -n 5 > "$WORK/test.es"
common=(--config "$RECIPE" --data.train.src "$WORK/train.en" --data.train.tgt "$WORK/train.es"
        --data.valid.src "" --data.valid.tgt "" --data.vocab.src "$WORK/vocab.spm" --data.vocab.tgt "$WORK/vocab.spm"
        --data.vocab.size 300 --model.d_model 16 --model.hidden 24 --model.attention_dim 16 --model.max_positions 64
        --model.moe.experts 4 --model.moe.k 2 --model.moe.hidden 16 --train.max_tokens 300 --train.update_freq 1
        --train.max_epochs 0 --train.warmup_updates 2 --train.hold_updates 2 --train.lr 3e-3 --train.log_every 1)
short=(--train.max_updates "$UPDATES" --train.save_every "$UPDATES")
losses() { grep '"type":"train"' "$1/metrics.jsonl" | sed -E 's/.*"loss":([^,]*),.*/\1/'; }

"$BIN/moe-train" "${common[@]}" "${short[@]}" --run_dir "$WORK/cpu" --train.device cpu --train.dtype f32 ||
  e2e_fail "moe-train on cpu"
for dtype in f32 bf16; do
  "$BIN/moe-train" "${common[@]}" "${short[@]}" --run_dir "$WORK/cuda-$dtype" --train.device cuda --train.dtype "$dtype" ||
    e2e_fail "moe-train on cuda ($dtype)"
  tol=$([[ $dtype == f32 ]] && echo 2e-4 || echo 3e-2)
  paste <(losses "$WORK/cpu") <(losses "$WORK/cuda-$dtype") | awk -v tol="$tol" -v name="$dtype" -v tag="$E2E_NAME" '
    { d = $1 - $2; if (d < 0) d = -d; r = d / ($1 > 0 ? $1 : 1); if (r > worst) worst = r; n++
      printf "%s: update %d loss cpu %s cuda %s %s (relative difference %.2g)\n", tag, n, $1, name, $2, r }
    END { if (n < 2) { print tag ": too few losses logged"; exit 1 }
          if (worst > tol) { printf "%s: %s losses differ from the cpu by %.2g > %s\n", tag, name, worst, tol; exit 1 } }' ||
    e2e_fail "cuda ($dtype) training does not match the cpu"
done

# Decoding: a model trained long enough (200 updates at the full rate, no dropout) to write sentences of
# several words, so that the comparison covers many steps of the beam.
"$BIN/moe-train" "${common[@]}" --run_dir "$WORK/cpu-200" --train.device cpu --train.dtype f32 --model.dropout 0 \
  --train.max_updates 200 --train.hold_updates 200 --train.save_every 200 --train.log_every 50 ||
  e2e_fail "moe-train (200 updates)"
ck="$WORK/cpu-200/checkpoint.last.safetensors"
for device in cpu cuda; do
  "$BIN/moe-translate" -m "$ck" -i "$WORK/test.en" -o "$WORK/hyp.$device" --beam 5 --length-penalty gnmt \
    --lenpen 0.6 --max-len-a 0 --max-len-b 20 --device "$device" || e2e_fail "moe-translate --device $device"
  "$BIN/moe-score" pairs -m "$ck" --src "$WORK/test.en" --tgt "$WORK/test.es" --device "$device" \
    > "$WORK/pairs.$device" || e2e_fail "moe-score pairs --device $device"
done
[[ "$(wc -l < "$WORK/hyp.cuda")" -eq 5 ]] || e2e_fail "moe-translate --device cuda wrote $(wc -l < "$WORK/hyp.cuda") lines"
[[ "$(wc -w < "$WORK/hyp.cpu")" -ge 15 ]] || e2e_fail "the translations are too short to compare: $(cat "$WORK/hyp.cpu")"
diff "$WORK/hyp.cpu" "$WORK/hyp.cuda" || e2e_fail "moe-translate --device cuda differs from --device cpu"
paste "$WORK/pairs.cpu" "$WORK/pairs.cuda" | awk '{ d = $1 - $3; if (d < 0) d = -d; if (d > 1e-3) exit 1 }' ||
  e2e_fail "moe-score pairs --device cuda differs from --device cpu"
echo "$E2E_NAME: OK ($UPDATES updates; f32 and bf16 losses match the cpu; 5 translations and their scores identical)"
