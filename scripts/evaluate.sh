#!/usr/bin/env bash
# The papers' evaluation chain for a finished run: reads RUN_DIR/config.yml (the merged recipe that
# trained it) and evaluates as the recipe's eval.* keys say.
#   checkpoint   eval.average_last N > 0: moe-average of the last N numbered checkpoints (per epoch with
#                train.numbered_checkpoints epochs, as MoA); 0: checkpoint.best.safetensors.
#   translation  moe-translate with beam eval.beam and length penalty eval.lenpen, then moe-score bleu:
#                sacreBLEU's default BLEU (13a, cased, detokenized text) and, per eval.paper_bleu, the
#                paper's: tokenized (BLEU of the tokenized text as it is, --tokenize none: IWSLT14) or
#                compound_split (13a tokens, hyphens split as ##AT##-##AT##: the WMT14 En-De convention
#                of Vaswani et al., MAE and MoA).
#   language     moe-score ppl over --text with the recipe's validation windows (valid.context tokens,
#   models       each later window scoring its last valid.stride: WikiText-103's "512/480").
# Prints one Markdown table row and one JSON line (the last two lines of stdout); files go to --out.
# usage: scripts/evaluate.sh RUN_DIR --src TEST.src --ref TEST.ref [--bin build/bin] [--device auto] [--out DIR]
#        scripts/evaluate.sh RUN_DIR --text TEST.txt [--bin build/bin] [--device auto] [--out DIR]
# Covered by tests/scripts/e2e_translation.sh and tests/scripts/e2e_lm.sh.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; }
RUN="${1:-}"
[[ -n "$RUN" && "$RUN" != -* ]] || { usage >&2; exit 2; }
shift
SRC=""; REF=""; TEXT=""; BIN="$ROOT/build/bin"; DEVICE="auto"; OUT=""
while (( $# )); do
  case "$1" in
    --src) SRC="$2"; shift 2 ;;
    --ref) REF="$2"; shift 2 ;;
    --text) TEXT="$2"; shift 2 ;;
    --bin) BIN="$2"; shift 2 ;;
    --device) DEVICE="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "evaluate.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
  esac
done
fail() { echo "evaluate.sh: $*" >&2; exit 1; }
CONFIG="$RUN/config.yml"
[[ -f "$CONFIG" ]] || fail "$CONFIG is missing: RUN_DIR must be a run folder moe-train wrote"
OUT="${OUT:-$RUN/eval}"
mkdir -p "$OUT"

# key SECTION NAME [DEFAULT]: a value of the merged configuration (sections of two-space-indented keys).
key() {
  local v
  v="$(awk -v sec="$1" -v name="$2" '
    /^[^ #]/ { cur = $0; sub(/:.*/, "", cur) }
    cur == sec && /^  [^ ]/ {
      line = $0; sub(/^  /, "", line); k = line; sub(/:.*/, "", k)
      if (k == name) { v = line; sub(/^[^:]*:[ ]*/, "", v); sub(/[ ]+#.*/, "", v); gsub(/["\047]/, "", v); print v; exit }
    }' "$CONFIG")"
  echo "${v:-${3:-}}"
}

TYPE="$(key model type)"
AVERAGE="$(key eval average_last 0)"
NAME="$(basename "$RUN")"
if (( AVERAGE > 0 )); then
  CKPT="$OUT/average-last-$AVERAGE.safetensors"
  "$BIN/moe-average" -o "$CKPT" --last "$AVERAGE" --run-dir "$RUN" >&2 || fail "moe-average --last $AVERAGE failed"
  WHICH="the last $AVERAGE checkpoints averaged"
else
  CKPT="$RUN/checkpoint.best.safetensors"
  [[ -f "$CKPT" ]] || CKPT="$RUN/checkpoint.last.safetensors"
  WHICH="$(basename "$CKPT")"
fi
[[ -f "$CKPT" ]] || fail "no checkpoint in $RUN"

json_escape() { sed 's/\\/\\\\/g; s/"/\\"/g' <<< "$1"; }

case "$TYPE" in
  transformer_mlm)
    fail "model.type transformer_mlm: moe-score has no masked-LM perplexity; the run's validation ppl on data.valid.text (metrics.jsonl) is the figure" ;;
  transformer_lm|lstm_lm)
    [[ -n "$TEXT" ]] || fail "a language model ($TYPE) is scored on --text TEST.txt"
    CONTEXT="$(key valid context 0)"; STRIDE="$(key valid stride 0)"
    [[ "$CONTEXT" != 0 ]] || CONTEXT="$(key data tokens_per_sample 512)"
    [[ "$STRIDE" != 0 ]] || STRIDE=$(( CONTEXT / 2 ))
    "$BIN/moe-score" ppl -m "$CKPT" -i "$TEXT" --context "$CONTEXT" --stride "$STRIDE" --device "$DEVICE" \
      --format json > "$OUT/ppl.json" || fail "moe-score ppl failed"
    PPL="$(awk -F': ' '/"score"/ { gsub(/[ ,]/, "", $2); print $2; exit }' "$OUT/ppl.json")"
    WPPL="$(awk -F': ' '/"word_ppl"/ { gsub(/[ ,]/, "", $2); print $2; exit }' "$OUT/ppl.json")"
    echo "| run | checkpoint | windows | test ppl | word ppl |"
    echo "|---|---|---|---|---|"
    echo "| $NAME | $WHICH | $CONTEXT / $STRIDE | $PPL | $WPPL |"
    echo "{\"run\": \"$(json_escape "$NAME")\", \"checkpoint\": \"$(json_escape "$WHICH")\", \"context\": $CONTEXT, \"stride\": $STRIDE, \"ppl\": $PPL, \"word_ppl\": $WPPL}"
    ;;
  *)
    [[ -n "$SRC" && -n "$REF" ]] || fail "a translation model is scored on --src TEST.src --ref TEST.ref"
    BEAM="$(key eval beam 5)"; LENPEN="$(key eval lenpen 1.0)"; PAPER="$(key eval paper_bleu none)"
    "$BIN/moe-translate" -m "$CKPT" -i "$SRC" -o "$OUT/hyp.txt" --beam "$BEAM" --lenpen "$LENPEN" \
      --device "$DEVICE" >&2 || fail "moe-translate failed"
    SACRE="$("$BIN/moe-score" bleu -r "$REF" -i "$OUT/hyp.txt" -b)" || fail "moe-score bleu failed"
    case "$PAPER" in
      none) TOK="" ;;
      tokenized) TOK="$("$BIN/moe-score" bleu -r "$REF" -i "$OUT/hyp.txt" --tokenize none -b)" ;;
      compound_split) TOK="$("$BIN/moe-score" bleu -r "$REF" -i "$OUT/hyp.txt" --tokenize 13a --compound-split -b)" ;;
      *) fail "eval.paper_bleu '$PAPER' is not none, tokenized or compound_split" ;;
    esac
    echo "| run | checkpoint | beam | lenpen | BLEU (sacreBLEU) | BLEU ($PAPER) |"
    echo "|---|---|---|---|---|---|"
    echo "| $NAME | $WHICH | $BEAM | $LENPEN | $SACRE | ${TOK:--} |"
    echo "{\"run\": \"$(json_escape "$NAME")\", \"checkpoint\": \"$(json_escape "$WHICH")\", \"beam\": $BEAM, \"lenpen\": $LENPEN, \"sacrebleu\": $SACRE, \"paper_bleu\": \"$PAPER\", \"paper_bleu_score\": ${TOK:-null}}"
    ;;
esac
