#!/usr/bin/env bash
# One Billion Word benchmark (Chelba et al. 2013): the tokenized, shuffled training shards 1-99
# (news.en-000{01..99}-of-00100), held-out shard 0 as test (159,658 tokens with </s>), held-out
# shard 1 as valid; the word vocabulary keeps words seen >= 3 times (793,471 with <S> </S> <UNK> on the
# full set); each sentence ends with </s> in the LM stream, as the benchmark counts it.
# Checked by hand with --from ../shared/data/1b-word-sample.
NAME=1b-word; SHARED_NAME=1b-word-sample
USAGE="usage: data-prep/1b-word.sh --out DIR [--from DIR] [--min-count 3] [--moe-vocab PATH] [--work DIR]
Writes train.txt valid.txt test.txt and vocab.txt ('word count' lines) to DIR.
Source: http://www.statmt.org/lm-benchmark/1-billion-word-language-modeling-benchmark-r13output.tar.gz
--from DIR  either the extracted 1-billion-word-language-modeling-benchmark-r13output/ folder, or a folder
  holding only news.en.heldout-00000-of-00050 (../shared/data/1b-word-sample): that shard becomes test.txt
  unchanged, and for development only its first 5,500 lines are train.txt and the rest valid.txt
  (so train overlaps test there: never report such numbers)."
source "$(dirname "$0")/common.sh"
parse_common "$@"
MIN_COUNT=3
set -- "${EXTRA_ARGS[@]+"${EXTRA_ARGS[@]}"}"
while [[ $# -gt 0 ]]; do
  case "$1" in --min-count) MIN_COUNT="$2"; shift 2 ;; *) die "unknown option $1 (see --help)" ;; esac
done
if [[ -z "$FROM" ]]; then
  fetch http://www.statmt.org/lm-benchmark/1-billion-word-language-modeling-benchmark-r13output.tar.gz "$WORK/1b.tar.gz"
  tar -xzf "$WORK/1b.tar.gz" -C "$WORK"
  FROM="$WORK/1-billion-word-language-modeling-benchmark-r13output"
fi
TRAIN_DIR="$FROM/training-monolingual.tokenized.shuffled"
HELD_DIR="$FROM/heldout-monolingual.tokenized.shuffled"
if [[ -d "$TRAIN_DIR" ]]; then
  cat "$TRAIN_DIR"/news.en-000??-of-00100 | sed -e 's/\r$//' > "$OUT/train.txt"
  sed -e 's/\r$//' "$HELD_DIR/news.en.heldout-00001-of-00050" > "$OUT/valid.txt"
  sed -e 's/\r$//' "$HELD_DIR/news.en.heldout-00000-of-00050" > "$OUT/test.txt"
  SOURCE="$FROM (full benchmark)"
else
  need_file "$FROM/news.en.heldout-00000-of-00050"
  log "warning: only the held-out shard 0 in $FROM: train/valid are carved from the test shard (development only)"
  sed -e 's/\r$//' "$FROM/news.en.heldout-00000-of-00050" > "$OUT/test.txt"
  head -n 5500 "$OUT/test.txt" > "$OUT/train.txt"
  tail -n +5501 "$OUT/test.txt" > "$OUT/valid.txt"
  SOURCE="$FROM (held-out shard 0 only; train overlaps test)"
fi
"$MOE_VOCAB" build -t word -i "$OUT/train.txt" -o "$OUT/vocab.txt" --min-count "$MIN_COUNT"
write_info "corpus=1b-word" "source=$SOURCE" "vocab=vocab.txt words with count >= $MIN_COUNT, others <unk>; </s> appended per sentence by the LM stream"
report_layout train.txt valid.txt test.txt vocab.txt
log "done: $OUT"
