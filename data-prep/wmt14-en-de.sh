#!/usr/bin/env bash
# WMT14 English->German as Vaswani et al. 2017 / Ott et al. 2018: Europarl v7 + Common Crawl + News
# Commentary v9 for training, newstest2013 valid, newstest2014 test, a shared 32k BPE vocabulary.
# Differences (no Moses here): SentencePiece BPE on raw text replaces Moses tokenisation + subword-nmt;
# cleaning follows clean-corpus-n.perl (1-250 words, ratio 1.5) on whitespace words.
# Checked by hand with --from ../shared/data/wmt14-ende.
NAME=wmt14-en-de; SHARED_NAME=wmt14-ende
USAGE="usage: data-prep/wmt14-en-de.sh --out DIR [--from DIR] [--vocab-size 32000] [--moe-vocab PATH] [--work DIR]
Writes train/valid/test.{src,tgt} (src=en, tgt=de) and vocab.spm (shared SentencePiece BPE) to DIR.
Sources: statmt.org training-parallel-{europarl-v7,commoncrawl}.tgz (WMT13), training-parallel-nc-v9.tgz,
  dev.tgz (newstest2013), test-full.tgz (newstest2014, 3,003 lines, the 'full' version).
--from DIR  local copies in the layout of ../shared/data/wmt14-ende: train10k.tok.{en,de} (Moses-
  tokenized, XML-escaped: unescaped here), newstest2013.tok.{en,de}, newstest2014.{en,de}.
  Only a 10k-pair training sample exists there: the vocabulary is smaller than 32k (SentencePiece
  stops where the data does) and the set is for development, not for reproducing BLEU."
source "$(dirname "$0")/common.sh"
parse_common "$@"
parse_vocab_size 32000
TMP="$OUT/.tmp"; mkdir -p "$TMP"
if [[ -n "$FROM" ]]; then
  for f in train10k.tok.en train10k.tok.de newstest2013.tok.en newstest2013.tok.de newstest2014.en newstest2014.de; do
    need_file "$FROM/$f"
  done
  xml_unescape < "$FROM/train10k.tok.en" | normalize > "$TMP/train.en"
  xml_unescape < "$FROM/train10k.tok.de" | normalize > "$TMP/train.de"
  xml_unescape < "$FROM/newstest2013.tok.en" | normalize > "$OUT/valid.src"
  xml_unescape < "$FROM/newstest2013.tok.de" | normalize > "$OUT/valid.tgt"
  normalize < "$FROM/newstest2014.en" > "$OUT/test.src"
  normalize < "$FROM/newstest2014.de" > "$OUT/test.tgt"
  SOURCE="$FROM (10k-pair sample, Moses-tokenized training text)"
else
  fetch http://www.statmt.org/wmt13/training-parallel-europarl-v7.tgz "$WORK/europarl.tgz"
  fetch http://www.statmt.org/wmt13/training-parallel-commoncrawl.tgz "$WORK/commoncrawl.tgz"
  fetch http://www.statmt.org/wmt14/training-parallel-nc-v9.tgz "$WORK/nc-v9.tgz"
  fetch http://www.statmt.org/wmt14/dev.tgz "$WORK/dev.tgz"
  fetch http://www.statmt.org/wmt14/test-full.tgz "$WORK/test-full.tgz"
  for t in europarl commoncrawl nc-v9 dev test-full; do tar -xzf "$WORK/$t.tgz" -C "$WORK"; done
  : > "$TMP/train.en"; : > "$TMP/train.de"
  for stem in training/europarl-v7.de-en commoncrawl.de-en training/news-commentary-v9.de-en; do
    f="$(find "$WORK" -path "*$stem.en" | head -1)"; [[ -n "$f" ]] || die "no $stem.en in the archives"
    g="${f%.en}.de"
    [[ $(wc -l < "$f") == $(wc -l < "$g") ]] || die "$f and $g are misaligned"
    normalize < "$f" >> "$TMP/train.en"; normalize < "$g" >> "$TMP/train.de"
  done
  normalize < "$(find "$WORK" -name newstest2013.en | head -1)" > "$OUT/valid.src"
  normalize < "$(find "$WORK" -name newstest2013.de | head -1)" > "$OUT/valid.tgt"
  sgm_text < "$(find "$WORK" -name 'newstest2014-deen-src.en.sgm' | head -1)" | normalize > "$OUT/test.src"
  sgm_text < "$(find "$WORK" -name 'newstest2014-deen-ref.de.sgm' | head -1)" | normalize > "$OUT/test.tgt"
  SOURCE="statmt.org WMT14 (europarl-v7, commoncrawl, nc-v9; newstest2013; newstest2014 full)"
fi
clean_pairs "$TMP/train.en" "$TMP/train.de" "$OUT/train.src" "$OUT/train.tgt" 1 250 1.5
"$MOE_VOCAB" build -i "$OUT/train.src" -i "$OUT/train.tgt" -o "$OUT/vocab.spm" -t bpe -s "$VOCAB_SIZE" \
  --input-sentence-size 10000000
rm -rf "$TMP"
write_info "corpus=wmt14 en-de" "direction=en-de" "source=$SOURCE" "cleaning=1-250 words, ratio 1.5" \
  "vocab=vocab.spm shared SentencePiece bpe $VOCAB_SIZE nmt_nfkc"
report_layout train.src train.tgt valid.src valid.tgt test.src test.tgt
log "done: $OUT"
