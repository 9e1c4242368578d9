#!/usr/bin/env bash
# Multi30k task 1 (Elliott et al. 2016), English->German by default: raw, cased, untokenized text;
# layout train/valid(=val)/test(=test_2016_flickr).{src,tgt} and a joint SentencePiece BPE vocabulary
# (8k, nmt_nfkc normalisation) in vocab.spm, as the Multi30k recipe uses. Tested by hand:
# data-prep/multi30k.sh --from ../shared/data/multi30k --out data/multi30k (see docs/PERF.md).
NAME=multi30k; SHARED_NAME=multi30k
USAGE="usage: data-prep/multi30k.sh --out DIR [--from DIR] [--src en] [--tgt de] [--vocab-size 8000]
                             [--vocab-type bpe|unigram] [--moe-vocab PATH] [--work DIR]
Prepares Multi30k task 1 (29,000 / 1,014 / 1,000 pairs) in DIR:
  train.{src,tgt} valid.{src,tgt} test.{src,tgt}  (test = test_2016_flickr), vocab.spm (joint), INFO
--from DIR  a folder with train.{en,de} val.{en,de} test_2016_flickr.{en,de} (plain or .gz);
            without it the files are downloaded from github.com/multi30k/dataset (data/task1/raw).
Normalisation: CR, control characters and trailing blanks removed; text stays raw and cased
(SentencePiece nmt_nfkc then maps the 44 non-breaking spaces in train.de to spaces)."
source "$(dirname "$0")/common.sh"
parse_common "$@"
SRC=en; TGT=de; VOCAB_SIZE=8000; VOCAB_TYPE=bpe
set -- "${EXTRA_ARGS[@]+"${EXTRA_ARGS[@]}"}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --src) SRC="$2"; shift 2 ;; --tgt) TGT="$2"; shift 2 ;;
    --vocab-size) VOCAB_SIZE="$2"; shift 2 ;; --vocab-type) VOCAB_TYPE="$2"; shift 2 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
BASE="https://github.com/multi30k/dataset/raw/master/data/task1/raw"
if [[ -z "$FROM" ]]; then
  for split in train val test_2016_flickr; do
    for l in en de; do fetch "$BASE/$split.$l.gz" "$WORK/$split.$l.gz"; done
  done
  FROM="$WORK"
fi
src_of() { # split lang -> file (plain or gz)
  if [[ -f "$FROM/$1.$2" ]]; then echo "$FROM/$1.$2"; elif [[ -f "$FROM/$1.$2.gz" ]]; then echo "$FROM/$1.$2.gz";
  else die "missing $FROM/$1.$2 (or .gz)"; fi
}
for pair in train:train val:valid test_2016_flickr:test; do
  in="${pair%%:*}"; out="${pair##*:}"
  s="$(src_of "$in" "$SRC")"; t="$(src_of "$in" "$TGT")"
  zcat -f "$s" | normalize > "$OUT/$out.src"
  zcat -f "$t" | normalize > "$OUT/$out.tgt"
  [[ $(wc -l < "$OUT/$out.src") == $(wc -l < "$OUT/$out.tgt") ]] || die "$s and $t are misaligned"
done
"$MOE_VOCAB" build -i "$OUT/train.src" -i "$OUT/train.tgt" -o "$OUT/vocab.spm" -t "$VOCAB_TYPE" -s "$VOCAB_SIZE"
write_info "corpus=multi30k task1" "direction=$SRC-$TGT" "source=${FROM}" "vocab=vocab.spm joint SentencePiece $VOCAB_TYPE $VOCAB_SIZE nmt_nfkc"
report_layout train.src train.tgt valid.src valid.tgt test.src test.tgt
log "done: $OUT"
