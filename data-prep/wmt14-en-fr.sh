#!/usr/bin/env bash
# WMT14 English->French as GNMT (Wu et al. 2016) and the sparsely-gated MoE paper (Shazeer et al. 2017,
# §5.3) use it: the usual ~36M-pair training corpus (Europarl v7, Common Crawl, UN, News Commentary v9,
# 10^9 French-English "giga-fren"), newstest2012 + newstest2013 as the dev set, newstest2014 (full,
# 3,003 lines, from its SGML) as the test set, and a shared SentencePiece vocabulary (32k wordpieces).
# Differences (no Moses here): SentencePiece BPE on raw text replaces tokenisation + wordpieces;
# cleaning follows clean-corpus-n.perl (1-250 words, ratio 1.5) on whitespace words.
# Tested by tests/data/prep_wmt14_en_fr_test.cpp on a small fixture laid out as the official archives (there is no
# French in ../shared/data).
NAME=wmt14-en-fr; SHARED_NAME=""  # ../shared/data has no En-Fr copy
USAGE="usage: data-prep/wmt14-en-fr.sh --out DIR [--from DIR] [--vocab-size 32000] [--moe-vocab PATH] [--work DIR]
Writes train/valid/test.{src,tgt} (src=en, tgt=fr) and vocab.spm (shared SentencePiece BPE) to DIR.
Sources (statmt.org): wmt13/training-parallel-europarl-v7.tgz, wmt13/training-parallel-commoncrawl.tgz,
  wmt13/training-parallel-un.tgz, wmt14/training-parallel-nc-v9.tgz, wmt10/training-giga-fren.tar,
  wmt14/dev.tgz (newstest2012, newstest2013), wmt14/test-full.tgz (newstest2014).
--from DIR  a folder with those seven files as downloaded (same names), for a machine without internet.
The valid set is newstest2012 followed by newstest2013 (6,003 lines); about 36M training pairs remain
after cleaning. MoA's En-Fr recipes build their own 40k BPE vocabulary from train.src/tgt on first use."
source "$(dirname "$0")/common.sh"
parse_common "$@"
parse_vocab_size 32000
ARCHIVES=(wmt13/training-parallel-europarl-v7.tgz wmt13/training-parallel-commoncrawl.tgz
          wmt13/training-parallel-un.tgz wmt14/training-parallel-nc-v9.tgz wmt10/training-giga-fren.tar
          wmt14/dev.tgz wmt14/test-full.tgz)
TMP="$OUT/.tmp"; mkdir -p "$TMP" "$WORK"
if [[ -n "$FROM" ]]; then
  for a in "${ARCHIVES[@]}"; do need_file "$FROM/$(basename "$a")"; done
fi
for a in "${ARCHIVES[@]}"; do
  file="$(basename "$a")"
  if [[ -n "$FROM" ]]; then src="$FROM/$file"; else src="$WORK/$file"; fetch "http://www.statmt.org/$a" "$src"; fi
  log "extracting $file"
  tar -xf "$src" -C "$WORK" || die "cannot extract $src"
done
read_text() { case "$1" in *.gz) gzip -dc "$1" ;; *) cat "$1" ;; esac; }
# find_one NAME: the one extracted file called NAME (an error names it when it is missing).
find_one() {
  local f; f="$(find "$WORK" -name "$1" -type f | head -1)"
  [[ -n "$f" ]] || die "no $1 in the extracted archives under $WORK"
  echo "$f"
}
: > "$TMP/train.en"; : > "$TMP/train.fr"
for stem in europarl-v7.fr-en commoncrawl.fr-en undoc.2000.fr-en news-commentary-v9.fr-en giga-fren.release2.fixed; do
  gz=""; [[ $stem == giga-fren* ]] && gz=".gz"
  en="$(find_one "$stem.en$gz")"; fr="$(find_one "$stem.fr$gz")"
  n_en="$(read_text "$en" | wc -l)"; n_fr="$(read_text "$fr" | wc -l)"
  [[ "$n_en" == "$n_fr" ]] || die "$en ($n_en lines) and $fr ($n_fr lines) are misaligned"
  log "$stem: $n_en pairs"
  read_text "$en" | normalize >> "$TMP/train.en"; read_text "$fr" | normalize >> "$TMP/train.fr"
done
for side in en:src fr:tgt; do
  lang="${side%%:*}"; out="${side##*:}"
  { normalize < "$(find_one "newstest2012.$lang")"; normalize < "$(find_one "newstest2013.$lang")"; } > "$OUT/valid.$out"
done
sgm_text < "$(find_one newstest2014-fren-src.en.sgm)" | normalize > "$OUT/test.src"
sgm_text < "$(find_one newstest2014-fren-ref.fr.sgm)" | normalize > "$OUT/test.tgt"
[[ $(wc -l < "$OUT/valid.src") == $(wc -l < "$OUT/valid.tgt") ]] || die "newstest2012+2013 are misaligned"
[[ $(wc -l < "$OUT/test.src") == $(wc -l < "$OUT/test.tgt") ]] || die "newstest2014's SGML files are misaligned"
clean_pairs "$TMP/train.en" "$TMP/train.fr" "$OUT/train.src" "$OUT/train.tgt" 1 250 1.5
"$MOE_VOCAB" build -i "$OUT/train.src" -i "$OUT/train.tgt" -o "$OUT/vocab.spm" -t bpe -s "$VOCAB_SIZE" \
  --input-sentence-size 10000000
rm -rf "$TMP"
write_info "corpus=wmt14 en-fr (europarl-v7, commoncrawl, un, nc-v9, giga-fren)" "direction=en-fr" \
  "source=${FROM:-statmt.org}" "valid=newstest2012+newstest2013" "test=newstest2014 full (sgm)" \
  "cleaning=1-250 words, ratio 1.5" "vocab=vocab.spm shared SentencePiece bpe $VOCAB_SIZE nmt_nfkc"
report_layout train.src train.tgt valid.src valid.tgt test.src test.tgt
log "done: $OUT"
