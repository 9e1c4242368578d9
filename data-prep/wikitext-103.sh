#!/usr/bin/env bash
# WikiText-103 (Merity et al. 2016) as Baevski & Auli 2019 / fairseq use it: the tokenized
# wiki.{train,valid,test}.tokens kept verbatim (one paragraph or heading a line, blank lines kept;
# the LM stream appends </s> to every line), and a word vocabulary of every training word (the corpus
# already maps rare words to its own <unk>; 267,735 types on the full set).
# Checked by hand with --from ../shared/data/wikitext-103-sample.
NAME=wikitext-103; SHARED_NAME=wikitext-103-sample
USAGE="usage: data-prep/wikitext-103.sh --out DIR [--from DIR] [--moe-vocab PATH] [--work DIR]
Writes train.txt valid.txt test.txt (word-level, tokenized) and vocab.txt ('word count' lines) to DIR.
Source: https://wikitext.smerity.com/wikitext-103-v1.zip (formerly
  https://s3.amazonaws.com/research.metamind.io/wikitext/wikitext-103-v1.zip, tried second).
--from DIR  a folder with wiki.train.tokens, wiki.valid.tokens [, wiki.test.tokens]
  (../shared/data/wikitext-103-sample: a 2.5 MiB training prefix cut mid-line, whose last partial
  line is dropped here, and no test file: valid.txt is then also written as test.txt)."
source "$(dirname "$0")/common.sh"
parse_common "$@"
[[ ${#EXTRA_ARGS[@]} -eq 0 ]] || die "unknown option ${EXTRA_ARGS[0]} (see --help)"
if [[ -z "$FROM" ]]; then
  if ! ( fetch https://wikitext.smerity.com/wikitext-103-v1.zip "$WORK/wikitext-103-v1.zip" ) 2>/dev/null; then
    fetch https://s3.amazonaws.com/research.metamind.io/wikitext/wikitext-103-v1.zip "$WORK/wikitext-103-v1.zip"
  fi
  python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$WORK/wikitext-103-v1.zip" "$WORK"
  FROM="$WORK/wikitext-103"
fi
need_file "$FROM/wiki.train.tokens"; need_file "$FROM/wiki.valid.tokens"
if [[ -n "$(tail -c 1 "$FROM/wiki.train.tokens")" ]]; then
  log "wiki.train.tokens does not end with a newline (a truncated sample): dropping its last partial line"
  sed '$d' "$FROM/wiki.train.tokens" | sed -e 's/\r$//' > "$OUT/train.txt"
else
  sed -e 's/\r$//' "$FROM/wiki.train.tokens" > "$OUT/train.txt"
fi
sed -e 's/\r$//' "$FROM/wiki.valid.tokens" > "$OUT/valid.txt"
if [[ -f "$FROM/wiki.test.tokens" ]]; then
  sed -e 's/\r$//' "$FROM/wiki.test.tokens" > "$OUT/test.txt"; TEST="wiki.test.tokens"
else
  log "warning: no wiki.test.tokens in $FROM: test.txt is a copy of valid.txt"
  cp "$OUT/valid.txt" "$OUT/test.txt"; TEST="copy of valid (no test file in --from)"
fi
"$MOE_VOCAB" build -t word -i "$OUT/train.txt" -o "$OUT/vocab.txt" --min-count 1
write_info "corpus=wikitext-103" "source=${FROM}" "test=$TEST" "vocab=vocab.txt all training words; <unk> is the corpus's own; </s> appended per line by the LM stream"
report_layout train.txt valid.txt test.txt vocab.txt
log "done: $OUT"
