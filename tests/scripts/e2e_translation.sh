#!/usr/bin/env bash
# End-to-end translation on the CPU: trains recipes/ci-tiny.yml on the first 2,000 Multi30k En-De
# pairs (a few hundred updates), checks from metrics.jsonl that the loss clearly falls, translates
# 100 test lines with moe-translate (line count preserved) and scores them with moe-score bleu, runs
# int8 inference (quantized on load and pre-quantized: identical, close to f32), runs scripts/evaluate.sh
# (averaging, beam, both BLEU figures as a Markdown row and a JSON line), builds a lexical shortlist and translates
# with it (moe-vocab lex, moe-translate --shortlist), writes word alignments (moe-translate --alignment), trains
# with guided alignment (moe-vocab lex --alignments, data.train.alignment) and checks that it moves the alignment
# head toward the given links (moe-score pairs --alignment, moe-score aer; --alignment-words), trains with data weighting (data.train.weights), then
# checks that an interrupted-and-resumed run logs exactly the losses of an uninterrupted one.
# Usage (ctest passes both): e2e_translation.sh BIN_DIR SHARED_DATA_DIR. Exit 77 = skipped (no data).
set -euo pipefail
BIN="${1:?usage: e2e_translation.sh BIN_DIR SHARED_DATA_DIR}"
DATA="${2:?usage: e2e_translation.sh BIN_DIR SHARED_DATA_DIR}/multi30k"
RECIPE="$(cd "$(dirname "$0")/../.." && pwd)/recipes/ci-tiny.yml"
UPDATES="${E2E_UPDATES:-200}"
E2E_NAME=e2e_translation
source "$(dirname "$0")/lib/e2e_common.sh"
if [[ ! -f "$DATA/train.en" ]]; then echo "e2e_translation: no Multi30k data in $DATA: skipped"; exit 77; fi
for p in moe-train moe-translate moe-score moe-average moe-vocab; do
  [[ -x "$BIN/$p" ]] || { echo "e2e_translation: $BIN/$p is missing" >&2; exit 1; }
done
WORK="$(mktemp -d "${TMPDIR:-/tmp}/moe-e2e.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
fail() { e2e_fail "$@"; }

head -n 2000 "$DATA/train.en" > "$WORK/train.en"; head -n 2000 "$DATA/train.de" > "$WORK/train.de"
head -n 200 "$DATA/val.en" > "$WORK/valid.en"; head -n 200 "$DATA/val.de" > "$WORK/valid.de"
head -n 100 "$DATA/test_2016_flickr.en" > "$WORK/test.en"; head -n 100 "$DATA/test_2016_flickr.de" > "$WORK/test.de"
common=(--config "$RECIPE" --data.train.src "$WORK/train.en" --data.train.tgt "$WORK/train.de"
        --data.valid.src "$WORK/valid.en" --data.valid.tgt "$WORK/valid.de"
        --data.vocab.src "$WORK/vocab.spm" --data.vocab.tgt "$WORK/vocab.spm")

# 1. Train; the loss must fall clearly (mean of the last three logged losses vs the first).
"$BIN/moe-train" "${common[@]}" --run_dir "$WORK/run" --train.max_updates "$UPDATES" --eval.average_last 2 \
  --eval.beam 4 --eval.lenpen 0.6 --eval.paper_bleu compound_split || fail "moe-train"
e2e_check_loss_falls "$WORK/run" 1.5
grep -q '"type":"valid"' "$WORK/run/metrics.jsonl" || fail "no validation line in metrics.jsonl"
[[ -f "$WORK/run/checkpoint.last.safetensors" && -f "$WORK/run/checkpoint.last.state.safetensors" ]] ||
  fail "checkpoint.last or its state is missing"

# 2. Translate 100 test lines and score them.
"$BIN/moe-translate" -m "$WORK/run/checkpoint.last.safetensors" -i "$WORK/test.en" -o "$WORK/hyp.de" \
  --beam 4 --device cpu || fail "moe-translate"
[[ "$(wc -l < "$WORK/hyp.de")" -eq 100 ]] || fail "moe-translate wrote $(wc -l < "$WORK/hyp.de") lines, not 100"
score="$("$BIN/moe-score" bleu -r "$WORK/test.de" -i "$WORK/hyp.de")" || fail "moe-score bleu"
echo "e2e_translation: $score"
grep -q "BLEU" <<< "$score" || fail "moe-score printed no BLEU score"

# 2b. int8 (models/int8_model.h): quantized on load and pre-quantized by moe-average give the same output; on
#     this small, barely trained model (flat distributions: small changes flip beams) int8 kept 55 of 100 lines
#     identical to f32 when written (the demo model: 87), 47 with 7-bit weights (BLEU 1.62 against f32's 1.57);
#     at least 30 must stay (a wrong scale or layout gives garbage), and BLEU within 1.5 of f32's.
"$BIN/moe-translate" -m "$WORK/run/checkpoint.last.safetensors" -i "$WORK/test.en" -o "$WORK/hyp8.de" \
  --beam 4 --device cpu --quantize int8 || fail "moe-translate --quantize int8"
"$BIN/moe-average" --quantize int8 -o "$WORK/int8.safetensors" "$WORK/run/checkpoint.last.safetensors" ||
  fail "moe-average --quantize int8"
"$BIN/moe-translate" -m "$WORK/int8.safetensors" -i "$WORK/test.en" -o "$WORK/hyp8pre.de" --beam 4 --device cpu ||
  fail "moe-translate of the pre-quantized checkpoint"
cmp -s "$WORK/hyp8.de" "$WORK/hyp8pre.de" || fail "pre-quantized and quantized-on-load translations differ"
# The parameters' bytes (the vocabulary tensors aside): a quarter of f32's, plus the scales (a float per
# output column or table row) and what stays f32 (biases, norms, gates).
param_bytes() {
  python3 - "$1" <<'EOF'
import json, struct, sys
with open(sys.argv[1], "rb") as f:
    header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
print(sum(v["data_offsets"][1] - v["data_offsets"][0] for k, v in header.items()
          if k != "__metadata__" and not k.startswith("vocab.")))
EOF
}
size32=$(param_bytes "$WORK/run/checkpoint.last.safetensors") size8=$(param_bytes "$WORK/int8.safetensors")
echo "e2e_translation: parameters of the int8 checkpoint $size8 bytes, f32 $size32"
(( size8 * 100 <= size32 * 30 )) || fail "the pre-quantized parameters take $size8 bytes, over 30% of f32's $size32"
same=$(paste -d '\t' "$WORK/hyp.de" "$WORK/hyp8.de" | awk -F '\t' '$1 == $2' | wc -l)
bleu_of() { "$BIN/moe-score" bleu -r "$WORK/test.de" -i "$1" | grep -o 'BLEU[^0-9]*[0-9.]*' | grep -o '[0-9.]*$'; }
bleu32=$(bleu_of "$WORK/hyp.de"); bleu8=$(bleu_of "$WORK/hyp8.de")
echo "e2e_translation: int8: $same of 100 lines as f32, BLEU $bleu8 (f32 $bleu32)"
(( same >= 30 )) || fail "int8 changed $((100 - same)) of 100 translations"
awk -v a="$bleu32" -v b="$bleu8" 'BEGIN { d = a - b; exit !(d <= 1.5 && d >= -1.5) }' ||
  fail "int8 BLEU $bleu8 is more than 1.5 from f32's $bleu32"

# 2c. A lexical shortlist (translator/shortlist.h): moe-vocab lex (IBM Model 1) on the training pairs, then
#     moe-translate --shortlist with its default sizes keeps the line count and stays close to the whole
#     vocabulary's BLEU (the list holds 100 first ids and 100 translations per source token of 1,000).
"$BIN/moe-vocab" lex -i "$WORK/train.en" --tgt "$WORK/train.de" --src-vocab "$WORK/vocab.spm" -o "$WORK/lex.s2t" \
  > "$WORK/lex.log" || fail "moe-vocab lex"
grep -q "pairs from 2000 sentence pairs" "$WORK/lex.log" || fail "moe-vocab lex: $(cat "$WORK/lex.log")"
"$BIN/moe-translate" -m "$WORK/run/checkpoint.last.safetensors" -i "$WORK/test.en" -o "$WORK/hyp-sl.de" \
  --beam 4 --device cpu --shortlist "$WORK/lex.s2t" 2> "$WORK/sl.err" || fail "moe-translate --shortlist"
grep -q "shortlist '.*lex.s2t': [0-9]* pairs (0 skipped" "$WORK/sl.err" || fail "no shortlist summary: $(cat "$WORK/sl.err")"
[[ "$(wc -l < "$WORK/hyp-sl.de")" -eq 100 ]] || fail "moe-translate --shortlist wrote $(wc -l < "$WORK/hyp-sl.de") lines"
bleu_sl=$(bleu_of "$WORK/hyp-sl.de")
echo "e2e_translation: shortlist: BLEU $bleu_sl (the whole vocabulary: $bleu32)"
awk -v a="$bleu32" -v b="$bleu_sl" 'BEGIN { d = a - b; exit !(d <= 1.5 && d >= -1.5) }' ||
  fail "shortlist BLEU $bleu_sl is more than 1.5 from the whole vocabulary's $bleu32"

# 2d. Word alignments (translator/alignment.h): --alignment hard writes "translation ||| s-t ..." with the same
#     translations and one pair per target position t = 0, 1, ..., n (the last: </s>).
"$BIN/moe-translate" -m "$WORK/run/checkpoint.last.safetensors" -i "$WORK/test.en" -o "$WORK/hyp-al.de" \
  --beam 4 --device cpu --alignment hard 2> /dev/null || fail "moe-translate --alignment hard"
[[ "$(wc -l < "$WORK/hyp-al.de")" -eq 100 ]] || fail "moe-translate --alignment wrote $(wc -l < "$WORK/hyp-al.de") lines"
awk -F ' [|][|][|] ' '{ print $1 }' "$WORK/hyp-al.de" | cmp -s - "$WORK/hyp.de" ||
  fail "the translations with --alignment differ from those without"
awk -F ' [|][|][|] ' 'NF != 2 { exit 1 } { n = split($2, p, " "); for (i = 1; i <= n; ++i)
    if (p[i] !~ /^[0-9]+-[0-9]+$/ || substr(p[i], index(p[i], "-") + 1) != i - 1) exit 1 }' "$WORK/hyp-al.de" ||
  fail "malformed hard alignments: $(head -n 3 "$WORK/hyp-al.de")"

# 2e. Guided alignment (training/guided_alignment.h): fast_align's model (moe-vocab lex --diagonal 4) aligns the
#     training pairs; 60 more updates with data.train.alignment (weight 1) from the trained model, and as many
#     without, then moe-score pairs --alignment hard on 300 of the pairs: the guided model's alignment head agrees
#     with the aligner's links on more target tokens than the unguided one's.
"$BIN/moe-vocab" lex -i "$WORK/train.en" --tgt "$WORK/train.de" --src-vocab "$WORK/vocab.spm" -o "$WORK/lex4.s2t" \
  --diagonal 4 --alignments "$WORK/train.align" > "$WORK/lex4.log" || fail "moe-vocab lex --alignments"
grep -q "links over 2000 sentence pairs" "$WORK/lex4.log" || fail "moe-vocab lex --alignments: $(cat "$WORK/lex4.log")"
[[ "$(wc -l < "$WORK/train.align")" -eq 2000 ]] || fail "moe-vocab lex wrote $(wc -l < "$WORK/train.align") alignment lines"
for arm in guided plain; do
  extra=()
  [[ $arm == guided ]] && extra=(--data.train.alignment "$WORK/train.align" --train.guided_alignment.weight 1)
  "$BIN/moe-train" "${common[@]}" --run_dir "$WORK/run-$arm" --train.init_from "$WORK/run/checkpoint.last.safetensors" \
    --train.max_updates 60 --train.valid_every 1000 "${extra[@]}" > "$WORK/train-$arm.log" 2>&1 ||
    { cat "$WORK/train-$arm.log"; fail "moe-train ($arm)"; }
  "$BIN/moe-score" pairs -m "$WORK/run-$arm/checkpoint.last.safetensors" --src <(head -n 300 "$WORK/train.en") \
    --tgt <(head -n 300 "$WORK/train.de") --alignment hard --device cpu > "$WORK/pairs-$arm.txt" 2> /dev/null ||
    fail "moe-score pairs --alignment ($arm)"
done
grep -q "word alignments .*train.align: [0-9]* links over 2000 pairs (guided alignment: cost ce, weight 1)" \
  "$WORK/train-guided.log" || fail "no word-alignment line in the guided run's log"
agreement() {  # the share of the aligner's links (first 300 pairs) that the head's hard alignment also has
  python3 - "$WORK/train.align" "$1" <<'PY'
import sys
given = [set(l.split()) for l in open(sys.argv[1], encoding="utf-8")][:300]
head = [set(l.rstrip("\n").split("\t")[2].split()) for l in open(sys.argv[2], encoding="utf-8")]
assert len(head) == 300, len(head)
links = sum(len(g) for g in given)
print(f"{sum(len(g & h) for g, h in zip(given, head)) / links:.3f}")
PY
}
guided=$(agreement "$WORK/pairs-guided.txt") plain=$(agreement "$WORK/pairs-plain.txt")
echo "e2e_translation: guided alignment: the head agrees with $guided of the aligner's links (unguided: $plain)"
awk -v g="$guided" -v p="$plain" 'BEGIN { exit !(g > p + 0.1) }' ||
  fail "guided alignment did not move the alignment head toward the links: $guided against $plain unguided"
# The same judged by moe-score aer (the aligner's links as sure gold links): the guided head's AER is lower.
head -n 300 "$WORK/train.align" > "$WORK/gold300.align"
aer() { cut -f3 "$WORK/pairs-$1.txt" | "$BIN/moe-score" aer -r "$WORK/gold300.align" -f json |
  sed -E 's/.*"score": ([0-9.]+),.*/\1/'; }
aer_guided=$(aer guided) aer_plain=$(aer plain)
echo "e2e_translation: AER against the aligner's links: guided $aer_guided, unguided $aer_plain"
awk -v g="$aer_guided" -v p="$aer_plain" 'BEGIN { exit !(g < p - 5) }' ||
  fail "moe-score aer: the guided head's AER $aer_guided is not below the unguided $aer_plain"
# 2e'. --alignment-words: links between whitespace-separated words, each inside its pair's words.
"$BIN/moe-score" pairs -m "$WORK/run-guided/checkpoint.last.safetensors" --src <(head -n 100 "$WORK/train.en") \
  --tgt <(head -n 100 "$WORK/train.de") --alignment hard --alignment-words --device cpu > "$WORK/pairs-words.txt" \
  2> /dev/null || fail "moe-score pairs --alignment-words"
python3 - "$WORK/train.en" "$WORK/train.de" "$WORK/pairs-words.txt" <<'PY' || fail "word links outside their words"
import sys
src = [l.split() for l in open(sys.argv[1], encoding="utf-8")][:100]
tgt = [l.split() for l in open(sys.argv[2], encoding="utf-8")][:100]
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[3], encoding="utf-8")]
assert len(rows) == 100, len(rows)
covered = 0
for s, t, row in zip(src, tgt, rows):
    links = [tuple(map(int, x.split("-"))) for x in row[2].split()]
    assert all(0 <= a < len(s) and 0 <= b < len(t) for a, b in links), (s, t, links)
    assert len(set(links)) == len(links)
    covered += len({b for _, b in links})
assert covered > 0.8 * sum(len(t) for t in tgt), covered  # nearly every target word is linked
PY

# 2f. Data weighting (data/target_weights.h): from the trained model, 20 updates each. Word weights of 1 (one per
#     target subword token, </s> left to its default 1) log exactly the losses of the unweighted run; sentence
#     weights of 2 log twice its losses (Adam is blind to the gradient's scale: the same steps; both without
#     clip_norm, which would not be); a bad weight is an error naming the file and line.
"$BIN/moe-vocab" encode --vocab "$WORK/vocab.spm" -i "$WORK/train.de" -o "$WORK/train.de.ids" || fail "moe-vocab encode"
awk '{ gsub(/[^ ]+/, "1"); print }' "$WORK/train.de.ids" > "$WORK/train.w-ones"
awk '{ print 2 }' "$WORK/train.de" > "$WORK/train.w-twice"
e2e_check_data_weighting "$WORK" "$WORK/train.w-ones" "$WORK/train.w-twice" \
  "train.w-ones (word): 2000 lines, mean weight per target token 1\b" "${common[@]}" \
  --train.init_from "$WORK/run/checkpoint.last.safetensors"

# 3. Averaging the kept numbered checkpoints.
"$BIN/moe-average" -o "$WORK/avg.safetensors" --last 2 --run-dir "$WORK/run" || fail "moe-average"

# 4. The papers' evaluation chain (scripts/evaluate.sh) with eval.* keys as a WMT14 recipe sets them
#    (given to the training run in step 1): the last 2 checkpoints averaged, beam 4, lenpen 0.6,
#    sacreBLEU and the tokenized BLEU with compound splitting, as one Markdown row and one JSON line.
eval_out="$("$(dirname "$0")/../../scripts/evaluate.sh" "$WORK/run" --src "$WORK/test.en" --ref "$WORK/test.de" \
  --bin "$BIN" --device cpu)" || fail "scripts/evaluate.sh"
echo "$eval_out"
grep -q "^| run | checkpoint | beam | lenpen | BLEU (sacreBLEU) | BLEU (compound_split) |" <<< "$eval_out" ||
  fail "evaluate.sh printed no Markdown table"
grep -q '"checkpoint": "the last 2 checkpoints averaged", "beam": 4, "lenpen": 0.6, "sacrebleu": [0-9.]*, "paper_bleu": "compound_split", "paper_bleu_score": [0-9.]*}' \
  <<< "$(tail -n 1 <<< "$eval_out")" || fail "evaluate.sh's JSON line is not as expected"
[[ "$(wc -l < "$WORK/run/eval/hyp.txt")" -eq 100 ]] || fail "evaluate.sh translated $(wc -l < "$WORK/run/eval/hyp.txt") lines"

# 5. Resume: 40 updates straight vs 20 + resume to 40; the logged losses must be identical.
e2e_check_resume "$WORK" "${common[@]}"
echo "e2e_translation: OK"
