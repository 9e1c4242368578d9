# The e2e step of scripts/gpu-check.sh (sourced by gpu-check-steps.sh): each model trained by moe-train
# on cuda:0 from the pack's data (WORK/data: multi30k/ as data-prep/multi30k.sh lays it out,
# wikitext-103-sample/), its first E2E_CMP logged losses checked against a CPU run with the same data,
# seed and batches (dropout masks come from the same Philox streams), then trained on to E2E_UPDATES
# updates (or E2E_MINUTES), and scored: beam-5 decoding of the test set and BLEU, or the LM's
# perplexity. Training in f32 compares within E2E_TOL_F32 (the order of floating-point sums differs);
# in bf16 within 3e-2 (bf16 rounding of weights and activations), after an f32 run of E2E_CMP updates.
# Covered by the rehearsal (tests/scripts/gpu_check_rehearsal.sh): the same commands at tiny sizes.

e2e_sizes_device() {  # on a GPU: recipe-sized models, small batches so the CPU runs stay short
  E2E_CMP=3 E2E_UPDATES=300 E2E_MINUTES=0.35 E2E_TOKENS=2000 E2E_DTYPE=bf16 E2E_TOL_F32=2e-3 E2E_TEST_LINES=500
  E2E_DECODE=(--dtype bf16 --max-tokens 16384) MT_SIZE=() LM_SIZE=() MOA_NAME=8K8E128D
  SERVE_CLIENTS="1 4 16" SERVE_SECONDS=10 SERVE_LINES=500 SERVE_ARGS=(--dtype bf16 --differ-ok)
}
e2e_sizes_emulated() {  # on the emulator: the same models, tiny
  E2E_CMP=2 E2E_UPDATES=3 E2E_MINUTES=5 E2E_TOKENS=300 E2E_DTYPE=f32 E2E_TOL_F32=2e-4 E2E_TEST_LINES=2
  E2E_DECODE=(--max-len-a 0 --max-len-b 6) MOA_NAME=2K4E8D
  SERVE_CLIENTS="1 2" SERVE_SECONDS=2 SERVE_LINES=4 SERVE_ARGS=(--max-len-b 3)  # f32: answers equal
  MT_SIZE=(--model.d_model 32 --model.ffn_dim 64 --model.heads 4 --model.enc_layers 1 --model.dec_layers 1
           --data.vocab.size 300 --valid.max_tokens 400)
  LM_SIZE=(--model.embed_dim 32 --model.hidden 32 --model.moe.hidden 64 --data.tokens_per_sample 16
           --valid.context 16 --valid.stride 16 --valid.max_tokens 400)
}

losses() { grep '"type":"train"' "$1/metrics.jsonl" | head -n "$2" | sed -E 's/.*"loss":([^,]*),.*/\1/'; }
# compare_losses CPU_RUN CUDA_RUN TOLERANCE: the largest relative difference of the first E2E_CMP losses.
compare_losses() {
  paste <(losses "$1" "$E2E_CMP") <(losses "$2" "$E2E_CMP") | awk -v tol="$3" '
    { d = $1 - $2; if (d < 0) d = -d; r = d / ($1 > 0 ? $1 : 1); if (r > worst) worst = r; n++ }
    END { printf "%.1e", worst; exit !(n == '"$E2E_CMP"' && worst <= tol) }'
}

# train NAME RUN DEVICE DTYPE UPDATES ARGS...: moe-train into WORK/e2e/NAME/RUN, its log kept in LOGS/e2e.
train() {
  local name="$1" run="$2" device="$3" dtype="$4" updates="$5"
  shift 5
  bounded env "${RUN_ENV[@]}" "$BIN/moe-train" "$@" --run_dir "$WORK/e2e/$name/$run" --train.device "$device" \
    --train.dtype "$dtype" --train.max_updates "$updates" --train.save_every "$updates" --train.valid_every "$updates" \
    > "$LOGS/e2e/$name-$run.log" 2>&1
  local rc=$?
  cp "$WORK/e2e/$name/$run/metrics.jsonl" "$LOGS/e2e/$name-$run.metrics.jsonl" 2>/dev/null
  return $rc
}

# e2e_model NAME KIND ARGS...: the CPU run, the CUDA runs, the comparisons and the score of one model.
e2e_model() {
  local name="$1" kind="$2" cmp rc=0 found=""
  shift 2
  local common=("$@" --train.max_tokens "$E2E_TOKENS" --train.warmup_updates 4 --train.log_every 1 --train.seed 1
                --train.keep_last 1)
  # The comparison runs validate on a few lines (CMP_VALID): a full validation on the CPU takes minutes.
  train "$name" cpu cpu f32 "$E2E_CMP" "${common[@]}" "${CMP_VALID[@]}" ||
    { note "$name: FAILED: moe-train on the cpu"; return 1; }
  if [[ "$E2E_DTYPE" != f32 ]]; then
    train "$name" cuda-f32 cuda f32 "$E2E_CMP" "${common[@]}" "${CMP_VALID[@]}" ||
      { note "$name: FAILED: moe-train on cuda (f32)"; return 1; }
    cmp="$(compare_losses "$WORK/e2e/$name/cpu" "$WORK/e2e/$name/cuda-f32" "$E2E_TOL_F32")" || rc=1
    found+="f32 losses within $cmp of the cpu's; "
  fi
  local t0=$SECONDS
  train "$name" cuda cuda "$E2E_DTYPE" "$E2E_UPDATES" "${common[@]}" --train.max_minutes "$E2E_MINUTES" ||
    { note "$name: FAILED: moe-train on cuda ($E2E_DTYPE)"; return 1; }
  local tol="$E2E_TOL_F32"; [[ "$E2E_DTYPE" == bf16 ]] && tol=3e-2
  cmp="$(compare_losses "$WORK/e2e/$name/cpu" "$WORK/e2e/$name/cuda" "$tol")" || rc=1
  local run="$WORK/e2e/$name/cuda" updates tok_s
  updates="$(grep -c '"type":"train"' "$run/metrics.jsonl")"
  tok_s="$(grep '"type":"train"' "$run/metrics.jsonl" | tail -n 20 |
           sed -E 's/.*"tokens_per_s":([^,]*).*/\1/' | sort -g | awk '{v[NR] = $1} END {printf "%.0f", v[int((NR + 1) / 2)]}')"
  found+="$E2E_DTYPE losses within $cmp over $E2E_CMP updates; $updates updates in $(( SECONDS - t0 )) s ($tok_s tokens/s)"
  (( rc == 0 )) || found="FAILED: $found (tolerance $tol)"
  local ck="$run/checkpoint.last.safetensors" score status
  if [[ "$kind" == mt ]]; then
    head -n "$E2E_TEST_LINES" "$WORK/data/multi30k/test.src" > "$WORK/e2e/$name/test.src"
    head -n "$E2E_TEST_LINES" "$WORK/data/multi30k/test.tgt" > "$WORK/e2e/$name/test.tgt"
    bounded env "${RUN_ENV[@]}" "$BIN/moe-translate" -m "$ck" --beam 5 --device cuda "${E2E_DECODE[@]}" \
      -i "$WORK/e2e/$name/test.src" -o "$LOGS/e2e/$name.hyp" 2> "$LOGS/e2e/$name-translate.log"
    status=$?
    (( status == 124 )) && { note "$name: $found; moe-translate --device cuda TIMED OUT (the step's time)"; return 124; }
    (( status == 0 )) || { note "$name: $found; FAILED: moe-translate --device cuda"; return 1; }
    score="$(env "${RUN_ENV[@]}" "$BIN/moe-score" bleu -b -r "$WORK/e2e/$name/test.tgt" -i "$LOGS/e2e/$name.hyp")" ||
      { note "$name: $found; FAILED: moe-score bleu"; return 1; }
    found+="; beam 5: BLEU $score on $E2E_TEST_LINES test lines, $(grep -oE '[0-9.]+ tokens/s' "$LOGS/e2e/$name-translate.log" | tail -1)"
  else
    score="$(bounded env "${RUN_ENV[@]}" "$BIN/moe-score" ppl -m "$ck" -i "$WORK/data/wikitext-103-sample/wiki.valid.tokens" \
             --device cuda -b 2> "$LOGS/e2e/$name-ppl.log")" || { note "$name: $found; FAILED: moe-score ppl"; return 1; }
    found+="; valid perplexity $score"
  fi
  note "$name: $found"
  return $rc
}

step_e2e() {
  mkdir -p "$LOGS/e2e" "$WORK/e2e"
  local m="$WORK/data/multi30k" w="$WORK/data/wikitext-103-sample" rc=0 model
  local mt=(--data.train.src "$m/train.src" --data.train.tgt "$m/train.tgt" --data.valid.src "$m/valid.src"
            --data.valid.tgt "$m/valid.tgt" --data.vocab.src "$m/vocab.spm" --data.vocab.tgt "$m/vocab.spm" "${MT_SIZE[@]}")
  local lm=(--data.train.text "$w/wiki.train.tokens" --data.valid.text "$w/wiki.valid.tokens"
            --data.vocab.path "$WORK/e2e/lm-vocab.words" --data.vocab.min_count 3 --data.cache_dir "$WORK/e2e"
            --train.update_freq 1 "${LM_SIZE[@]}")
  local tiny="$WORK/e2e/valid-tiny"
  mkdir -p "$tiny"
  head -n 16 "$m/valid.src" > "$tiny/valid.src"
  head -n 16 "$m/valid.tgt" > "$tiny/valid.tgt"
  head -n 40 "$w/wiki.valid.tokens" > "$tiny/wiki.valid.tokens"
  for model in $E2E_MODELS; do
    if [[ $model == lstm-moe-lm ]]; then CMP_VALID=(--data.valid.text "$tiny/wiki.valid.tokens")
    else CMP_VALID=(--data.valid.src "$tiny/valid.src" --data.valid.tgt "$tiny/valid.tgt"); fi
    if (( STEP_END - SECONDS < 15 )); then note "$model: not run (the step's time is spent)"; continue; fi
    case "$model" in
      transformer) e2e_model "$model" mt --config "$ROOT/recipes/multi30k-en-de.yml" "${mt[@]}" ;;
      moe-ffn) e2e_model "$model" mt --config "$ROOT/recipes/multi30k-en-de-moe.yml" "${mt[@]}" \
                 $( (( EMULATE )) && echo --model.ffn.experts 4 --model.ffn.hidden 64) ;;
      moa) e2e_model "$model" mt --config "$ROOT/recipes/multi30k-en-de-moa.yml" "${mt[@]}" --model.attention.name "$MOA_NAME" ;;
      mae-7) e2e_model "$model" mt --config "$ROOT/recipes/multi30k-en-de-mae-7.yml" "${mt[@]}" --model.heads 8 ;;
      lstm-moe-lm) e2e_model "$model" lm --config "$ROOT/recipes/1b-word-moe-4.yml" "${lm[@]}" ;;
      *) note "$model: no such model (transformer, moe-ffn, moa, mae-7, lstm-moe-lm)"; false ;;
    esac || rc=$?
  done
  return $rc
}
