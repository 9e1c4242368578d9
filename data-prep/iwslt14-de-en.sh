#!/usr/bin/env bash
# IWSLT14 German->English as fairseq's prepare-iwslt14.sh: TED transcripts, XML lines dropped,
# lowercased, cleaned to 1-175 words with ratio 1.5, every 23rd training pair held out as valid,
# test = dev2010 + tst2010-2012 + TEDX.dev2012 (6,750 pairs); separate source/target vocabularies
# (fairseq's joint 10k BPE gives ~8.8k German / ~6.6k English types; here two SentencePiece BPE
# models of 9000 / 7000). No Moses tokenizer here: SentencePiece on lowercased raw text instead.
# Checked by hand with --from ../shared/data/iwslt14-deen.
NAME=iwslt14-de-en; SHARED_NAME=iwslt14-deen
USAGE="usage: data-prep/iwslt14-de-en.sh --out DIR [--from DIR] [--src-vocab-size 9000] [--tgt-vocab-size 7000]
                                  [--moe-vocab PATH] [--work DIR]
Writes train/valid/test.{src,tgt} (src=de, tgt=en), vocab.src.spm and vocab.tgt.spm to DIR.
Source: the IWSLT 2014 de-en archive (https://wit3.fbk.eu/archive/2014-01/texts/de/en/de-en.tgz; mirror
  http://dl.fbaipublicfiles.com/fairseq/data/iwslt14/de-en.tgz is tried second).
--from DIR  local copies: either an extracted de-en/ folder of that archive, or the layout of
  ../shared/data/iwslt14-deen (valid.de-en.{de,en}, test.de-en.{de,en}: already lowercased and
  tokenized). That folder has NO training set: its valid split is then used for training (every 23rd
  pair held out as valid), for development only."
source "$(dirname "$0")/common.sh"
parse_common "$@"
SV=9000; TV=7000
set -- "${EXTRA_ARGS[@]+"${EXTRA_ARGS[@]}"}"
while [[ $# -gt 0 ]]; do
  case "$1" in --src-vocab-size) SV="$2"; shift 2 ;; --tgt-vocab-size) TV="$2"; shift 2 ;;
    *) die "unknown option $1 (see --help)" ;; esac
done
TMP="$OUT/.tmp"; mkdir -p "$TMP"
lower() { python3 -c 'import sys
for l in sys.stdin: sys.stdout.write(l.lower())'; }
tags_text() { grep -v -e '<url>' -e '<talkid>' -e '<keywords>' -e '<speaker>' -e '<reviewer' -e '<translator' \
  -e '<doc' -e '</doc>' | sed -e 's/<title>//g' -e 's/<\/title>//g' -e 's/<description>//g' -e 's/<\/description>//g' \
  -e 's/^[[:space:]]*//'; }
xml_segs() { grep '<seg id' | sed -e 's/<seg id="[0-9]*">\s*//g' -e 's/\s*<\/seg>//g' -e "s/\’/\'/g"; }
if [[ -n "$FROM" && -f "$FROM/valid.de-en.de" ]]; then
  for f in valid.de-en.de valid.de-en.en test.de-en.de test.de-en.en; do need_file "$FROM/$f"; done
  normalize < "$FROM/valid.de-en.de" | lower > "$TMP/all.de"
  normalize < "$FROM/valid.de-en.en" | lower > "$TMP/all.en"
  normalize < "$FROM/test.de-en.de" | lower > "$OUT/test.src"
  normalize < "$FROM/test.de-en.en" | lower > "$OUT/test.tgt"
  SOURCE="$FROM (no training set: its valid split serves as training data, development only)"
  log "warning: $SOURCE"
else
  if [[ -z "$FROM" ]]; then
    if ! ( fetch https://wit3.fbk.eu/archive/2014-01/texts/de/en/de-en.tgz "$WORK/de-en.tgz" ) 2>/dev/null; then
      fetch http://dl.fbaipublicfiles.com/fairseq/data/iwslt14/de-en.tgz "$WORK/de-en.tgz"
    fi
    tar -xzf "$WORK/de-en.tgz" -C "$WORK"
    D="$WORK/de-en"
  else
    D="$FROM"; [[ -d "$D/de-en" ]] && D="$D/de-en"
  fi
  need_file "$D/train.tags.de-en.de"
  tags_text < "$D/train.tags.de-en.de" | normalize | lower > "$TMP/all.de"
  tags_text < "$D/train.tags.de-en.en" | normalize | lower > "$TMP/all.en"
  : > "$OUT/test.src"; : > "$OUT/test.tgt"
  for o in IWSLT14.TED.dev2010 IWSLT14.TEDX.dev2012 IWSLT14.TED.tst2010 IWSLT14.TED.tst2011 IWSLT14.TED.tst2012; do
    xml_segs < "$D/$o.de-en.de.xml" | normalize | lower >> "$OUT/test.src"
    xml_segs < "$D/$o.de-en.en.xml" | normalize | lower >> "$OUT/test.tgt"
  done
  SOURCE="IWSLT14 de-en TED archive"
fi
clean_pairs "$TMP/all.de" "$TMP/all.en" "$TMP/clean.de" "$TMP/clean.en" 1 175 1.5
: > "$OUT/valid.src"; : > "$OUT/train.src"; : > "$OUT/valid.tgt"; : > "$OUT/train.tgt"
awk '{ if (NR % 23 == 0) print > "'"$OUT"'/valid.src"; else print > "'"$OUT"'/train.src" }' "$TMP/clean.de"
awk '{ if (NR % 23 == 0) print > "'"$OUT"'/valid.tgt"; else print > "'"$OUT"'/train.tgt" }' "$TMP/clean.en"
"$MOE_VOCAB" build -i "$OUT/train.src" -o "$OUT/vocab.src.spm" -t bpe -s "$SV"
"$MOE_VOCAB" build -i "$OUT/train.tgt" -o "$OUT/vocab.tgt.spm" -t bpe -s "$TV"
rm -rf "$TMP"
write_info "corpus=iwslt14 de-en" "direction=de-en" "source=$SOURCE" "cleaning=lowercase, 1-175 words, ratio 1.5, valid = every 23rd pair" \
  "vocab=vocab.src.spm (bpe $SV) vocab.tgt.spm (bpe $TV), separate, nmt_nfkc"
report_layout train.src train.tgt valid.src valid.tgt test.src test.tgt
log "done: $OUT"
