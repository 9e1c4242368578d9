#!/usr/bin/env bash
# Subword regularisation end to end (data/subword_sampling.h): recipes/ci-tiny.yml on 300 Multi30k pairs (about ten
# batches an epoch) with data.train.subword_alpha 0.1 (BPE-dropout):
#  1. 40 updates straight and 20 then --resume to 40 log the same losses: the resumed run, restarted in its second
#     epoch, segments that epoch as the uninterrupted run did;
#  2. those losses differ from the run without sampling, and the log says that sampling is on;
#  3. subword sampling with word weights, or with a word-list vocabulary, is an error naming the keys.
# Usage (ctest passes both): subword_sampling.sh BIN_DIR SHARED_DATA_DIR. Exit 77 = skipped (no data).
set -euo pipefail
E2E_NAME=subword_sampling
source "$(dirname "$0")/lib/e2e_common.sh"
e2e_tiny_setup "$@"
[[ -x "$BIN/moe-train" ]] || e2e_fail "$BIN/moe-train is missing"

# 1. Exact resume with sampled segmentations.
mkdir -p "$WORK/sampled" "$WORK/plain"
e2e_check_resume "$WORK/sampled" "${TINY[@]}" --data.train.subword_alpha 0.1 > "$WORK/sampled.log" 2>&1 ||
  { cat "$WORK/sampled.log"; exit 1; }
grep "^$E2E_NAME:" "$WORK/sampled.log"
grep -q "resumed from .* at update 20 (epoch 1)" "$WORK/sampled.log" || e2e_fail "the resume was not in the second epoch"
grep -q "subword sampling (alpha 0.1, nbest -1): every epoch segments the training pairs anew" "$WORK/sampled.log" ||
  e2e_fail "no subword-sampling line in the log"

# 2. Sampling changes what is trained on.
"$BIN/moe-train" "${TINY[@]}" --run_dir "$WORK/plain/full" --train.max_updates 40 --train.log_every 5 \
  --train.valid_every 10 > /dev/null 2>&1 || e2e_fail "moe-train (no sampling)"
losses() { grep '"type":"train"' "$1/metrics.jsonl" | sed -E 's/.*"loss":([^,]*),.*/\1/'; }
[[ "$(losses "$WORK/plain/full" | wc -l)" -eq 8 ]] || e2e_fail "expected 8 logged losses without sampling"
[[ "$(losses "$WORK/plain/full")" != "$(losses "$WORK/sampled/full")" ]] ||
  e2e_fail "subword_alpha 0.1 logged the losses of the run without sampling"
echo "$E2E_NAME: losses with sampling $(losses "$WORK/sampled/full" | tail -n 1), without $(losses "$WORK/plain/full" | tail -n 1)"

# 3. Combinations that cannot work are refused before training.
awk '{ print 1 }' "$WORK/train.de" > "$WORK/train.w"
if "$BIN/moe-train" "${TINY[@]}" --run_dir "$WORK/bad" --data.train.subword_alpha 0.1 --data.train.weights "$WORK/train.w" \
  --data.train.weighting word > "$WORK/bad.log" 2>&1; then e2e_fail "subword sampling with word weights was accepted"; fi
grep -q "data.train.subword_alpha and data.train.weighting word exclude each other" "$WORK/bad.log" ||
  e2e_fail "unexpected error: $(tail -n 1 "$WORK/bad.log")"
tr ' ' '\n' < "$WORK/train.en" | sort -u > "$WORK/words.txt"
if "$BIN/moe-train" "${TINY[@]}" --run_dir "$WORK/bad" --data.train.subword_alpha 0.1 --data.vocab.src "$WORK/words.txt" \
  --data.vocab.tgt "$WORK/words.txt" > "$WORK/bad.log" 2>&1; then e2e_fail "subword sampling with a word list was accepted"; fi
grep -q "data.train.subword_alpha samples SentencePiece segmentations, but data.vocab.src '.*words.txt' is a word list" \
  "$WORK/bad.log" || e2e_fail "unexpected error: $(tail -n 1 "$WORK/bad.log")"
echo "$E2E_NAME: OK"
