#!/usr/bin/env bash
# End to end on the CPU, from data to BLEU, for the recipes of issue 23 (the sparsely-gated MoE paper's
# LSTM translation models: the baseline, MoE-32 with strictly balanced gating, MoE-2048-h, whose
# 512-h and En-De variants differ only in sizes and data; MoA's En-Fr rows) at small sizes (overrides
# below; the architecture, gating, schedule and loss of each recipe unchanged) on
# 1,500 English-Spanish Bible verse pairs standing in for WMT14 (../shared/data has no French): each
# trains 60 updates (the loss must fall), translates 40 test verses with beam 5 and the GNMT length
# penalty, scores them with moe-score bleu; the LSTM models also go through moe-score pairs and
# moe-score experts (their MoE sites must be reported).
# Usage (ctest passes both): e2e_lstm_seq2seq.sh BIN_DIR SHARED_DATA_DIR. Exit 77 = skipped (no data).
set -euo pipefail
BIN="${1:?usage: e2e_lstm_seq2seq.sh BIN_DIR SHARED_DATA_DIR}"
DATA="${2:?usage: e2e_lstm_seq2seq.sh BIN_DIR SHARED_DATA_DIR}/bible-en-es"
RECIPES="$(cd "$(dirname "$0")/../.." && pwd)/recipes"
E2E_NAME=e2e_lstm_seq2seq
source "$(dirname "$0")/lib/e2e_common.sh"
[[ -f "$DATA/bible.en" ]] || { echo "$E2E_NAME: no Bible pairs in $DATA: skipped"; exit 77; }
WORK="$(mktemp -d "${TMPDIR:-/tmp}/moe-e2e-seq2seq.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

paste -d '\t' "$DATA/bible.en" "$DATA/bible.es" | awk -F '\t' 'NF == 2 && length($1) < 120 && length($2) < 120' > "$WORK/pairs"
split_pairs() { sed -n "$1p" "$WORK/pairs" | cut -f1 > "$WORK/$2.en"; sed -n "$1p" "$WORK/pairs" | cut -f2 > "$WORK/$2.es"; }
split_pairs 1,1500 train; split_pairs 1501,1580 valid; split_pairs 1581,1620 test
data=(--data.train.src "$WORK/train.en" --data.train.tgt "$WORK/train.es" --data.valid.src "$WORK/valid.en"
      --data.valid.tgt "$WORK/valid.es" --data.vocab.src "$WORK/vocab.spm" --data.vocab.tgt "$WORK/vocab.spm"
      --data.vocab.size 600 --data.max_len 60)
train=(--train.device cpu --train.max_tokens 1200 --train.update_freq 1 --train.max_updates 60 --train.max_epochs 0
       --train.warmup_updates 10 --train.lr 3e-3 --train.log_every 10 --train.valid_every 60 --train.save_every 60)
lstm=(--model.d_model 32 --model.hidden 48 --model.attention_dim 32 --model.dropout 0.1 --model.max_positions 128
      --model.moe.hidden 32 --model.moe.experts_per_rank 0 --train.hold_updates 10)
moa=(--model.d_model 32 --model.ffn_dim 64 --model.heads 4 --model.enc_layers 2 --model.dec_layers 2)

run_recipe() {
  local recipe="$1" kind="$2"; shift 2
  local run="$WORK/$recipe"
  "$BIN/moe-train" --config "$RECIPES/$recipe.yml" "${data[@]}" "${train[@]}" "$@" --run_dir "$run" \
    > "$run.log" 2>&1 || { cat "$run.log"; e2e_fail "moe-train $recipe"; }
  e2e_check_loss_falls "$run" 0.5
  local ck="$run/checkpoint.last.safetensors"
  "$BIN/moe-translate" -m "$ck" -i "$WORK/test.en" -o "$run.hyp" --beam 5 --length-penalty gnmt --lenpen 0.6 \
    --max-len-a 1.5 --max-len-b 5 --device cpu 2> "$run.translate.log" || e2e_fail "moe-translate $recipe"
  [[ "$(wc -l < "$run.hyp")" -eq 40 ]] || e2e_fail "$recipe: moe-translate wrote $(wc -l < "$run.hyp") lines"
  echo "$E2E_NAME: $recipe: $("$BIN/moe-score" bleu -r "$WORK/test.es" -i "$run.hyp")" || e2e_fail "moe-score bleu $recipe"
  [[ $kind == lstm ]] || return 0
  "$BIN/moe-score" pairs -m "$ck" --src "$WORK/test.en" --tgt "$WORK/test.es" --device cpu > "$run.pairs" \
    2> "$run.pairs.log" || e2e_fail "moe-score pairs $recipe"
  [[ "$(wc -l < "$run.pairs")" -eq 40 ]] || e2e_fail "$recipe: moe-score pairs scored $(wc -l < "$run.pairs") pairs"
  grep -q "PPL = " "$run.pairs.log" || e2e_fail "$recipe: moe-score pairs printed no perplexity"
  if [[ $recipe != *baseline* ]]; then
    "$BIN/moe-score" experts -m "$ck" --src "$WORK/test.en" --tgt "$WORK/test.es" --device cpu --format json \
      > "$run.experts" 2> "$run.experts.log" || { cat "$run.experts.log"; e2e_fail "moe-score experts $recipe"; }
    for site in encoder.l1.moe decoder.l0.moe; do
      grep -q "\"site\":\"$site\"" "$run.experts" || e2e_fail "$recipe: moe-score experts reports no site $site"
    done
  fi
}

run_recipe wmt14-en-fr-moe-lstm-baseline lstm "${lstm[@]}"
run_recipe wmt14-en-fr-moe-32 lstm "${lstm[@]}" --model.moe.experts 8 --model.moe.k 2
run_recipe wmt14-en-fr-moe-2048-h lstm "${lstm[@]}" --model.moe.experts 8 --model.moe.groups 2
run_recipe wmt14-en-fr-moa-8K8E128D moa "${moa[@]}" --model.attention.name 4K4E8D  # k = E: the dense path
run_recipe wmt14-en-fr-moa-16K32E256D moa "${moa[@]}" --model.attention.name 2K4E8D  # k < E: the sparse path
echo "$E2E_NAME: OK"
