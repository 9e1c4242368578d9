#!/usr/bin/env bash
# The whole CUDA path end to end, on a GPU or under the CUDA emulator (emu/): recipes/ci-tiny.yml
# trained for a few updates on the CPU and on cuda:0 from the same data and seed (dropout masks come
# from the same Philox streams on both) logs the same losses: f32 within 2e-4 relative, bf16 within
# 3e-2 (bf16 rounding of weights and activations); moe-translate --device cuda (beam 4) then writes
# exactly the CPU's translations of 10 test lines from a checkpoint trained further on the CPU (80
# updates: a model that has learnt to stop, whose beams are not near-ties; at most 30 tokens a line,
# as every emulated decoding step costs), with the whole vocabulary and with a lexical shortlist and alignments.
# Usage (ctest passes both): cuda_e2e.sh BIN_DIR SHARED_DATA_DIR. Exit 77 = skipped: no CUDA device
# (a build without CUDA, or nvcc's build on a machine without a GPU) or no data.
set -euo pipefail
BIN="${1:?usage: cuda_e2e.sh BIN_DIR SHARED_DATA_DIR}"
DATA="${2:?usage: cuda_e2e.sh BIN_DIR SHARED_DATA_DIR}/multi30k"
RECIPE="$(cd "$(dirname "$0")/../.." && pwd)/recipes/ci-tiny.yml"
UPDATES="${CUDA_E2E_UPDATES:-6}"
E2E_NAME=cuda_e2e
source "$(dirname "$0")/lib/e2e_common.sh"
if [[ ! -f "$DATA/train.en" ]]; then echo "cuda_e2e: no Multi30k data in $DATA: skipped"; exit 77; fi
if ! "$BIN/moe-bench" --has-cuda; then echo "cuda_e2e: no CUDA device (GPU or emulator): skipped"; exit 77; fi
WORK="$(mktemp -d "${TMPDIR:-/tmp}/moe-cuda-e2e.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

head -n 300 "$DATA/train.en" > "$WORK/train.en"; head -n 300 "$DATA/train.de" > "$WORK/train.de"
head -n 40 "$DATA/val.en" > "$WORK/valid.en"; head -n 40 "$DATA/val.de" > "$WORK/valid.de"
head -n 10 "$DATA/test_2016_flickr.en" > "$WORK/test.en"
common=(--config "$RECIPE" --data.train.src "$WORK/train.en" --data.train.tgt "$WORK/train.de"
        --data.valid.src "$WORK/valid.en" --data.valid.tgt "$WORK/valid.de"
        --data.vocab.src "$WORK/vocab.spm" --data.vocab.tgt "$WORK/vocab.spm"
        --train.max_updates "$UPDATES" --train.log_every 1 --train.valid_every "$UPDATES"
        --train.save_every "$UPDATES" --train.max_tokens 600)
losses() { grep '"type":"train"' "$1/metrics.jsonl" | sed -E 's/.*"loss":([^,]*),.*/\1/'; }

"$BIN/moe-train" "${common[@]}" --run_dir "$WORK/cpu" --train.device cpu --train.dtype f32 || e2e_fail "moe-train on cpu"
for dtype in f32 bf16; do
  "$BIN/moe-train" "${common[@]}" --run_dir "$WORK/cuda-$dtype" --train.device cuda --train.dtype "$dtype" ||
    e2e_fail "moe-train on cuda ($dtype)"
  tol=$([[ $dtype == f32 ]] && echo 2e-4 || echo 3e-2)
  paste <(losses "$WORK/cpu") <(losses "$WORK/cuda-$dtype") | awk -v tol="$tol" -v name="$dtype" '
    { d = $1 - $2; if (d < 0) d = -d; r = d / ($1 > 0 ? $1 : 1); if (r > worst) worst = r; n++
      printf "cuda_e2e: update %d loss cpu %s cuda %s %s (relative difference %.2g)\n", n, $1, name, $2, r }
    END { if (n < 2) { print "cuda_e2e: too few losses logged"; exit 1 }
          if (worst > tol) { printf "cuda_e2e: %s losses differ from the cpu by %.2g > %s\n", name, worst, tol; exit 1 } }' ||
    e2e_fail "cuda ($dtype) training does not match the cpu"
done

"$BIN/moe-train" "${common[@]}" --run_dir "$WORK/cpu-80" --train.device cpu --train.dtype f32 \
  --train.max_updates 80 --train.valid_every 80 --train.save_every 80 --train.log_every 20 || e2e_fail "moe-train (80 updates)"
for device in cpu cuda; do
  "$BIN/moe-translate" -m "$WORK/cpu-80/checkpoint.last.safetensors" -i "$WORK/test.en" -o "$WORK/hyp.$device" \
    --beam 4 --max-len-a 0 --max-len-b 30 --device "$device" || e2e_fail "moe-translate --device $device"
done
[[ "$(wc -l < "$WORK/hyp.cuda")" -eq 10 ]] || e2e_fail "moe-translate --device cuda wrote $(wc -l < "$WORK/hyp.cuda") lines"
diff "$WORK/hyp.cpu" "$WORK/hyp.cuda" || e2e_fail "moe-translate --device cuda differs from --device cpu"
# A lexical shortlist (translator/shortlist.h) and word alignments (translator/alignment.h): the restricted output
# layer and the alignment head on the device give the CPU's translations and alignments.
"$BIN/moe-vocab" lex -i "$WORK/train.en" --tgt "$WORK/train.de" --src-vocab "$WORK/vocab.spm" -o "$WORK/lex.s2t" \
  > /dev/null || e2e_fail "moe-vocab lex"
for device in cpu cuda; do
  "$BIN/moe-translate" -m "$WORK/cpu-80/checkpoint.last.safetensors" -i "$WORK/test.en" -o "$WORK/hyp-sl.$device" \
    --beam 4 --max-len-a 0 --max-len-b 30 --device "$device" --shortlist "$WORK/lex.s2t" 50 20 --alignment hard \
    --quiet || e2e_fail "moe-translate --shortlist --alignment hard --device $device"
done
grep -q ' ||| [0-9]*-0' "$WORK/hyp-sl.cpu" || e2e_fail "moe-translate --alignment hard wrote no alignments"
diff "$WORK/hyp-sl.cpu" "$WORK/hyp-sl.cuda" ||
  e2e_fail "moe-translate --shortlist --alignment hard: --device cuda differs from cpu"
echo "cuda_e2e: OK ($UPDATES updates; f32 and bf16 losses match the cpu; 10 translations identical, with a shortlist" \
  "and alignments too)"
