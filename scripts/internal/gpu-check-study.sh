# The study step of scripts/gpu-check.sh (sourced by gpu-check-steps.sh): scripts/study.sh's GPU grid
# (--tasks gpu: six Multi30k models at the full recipe's size, each trained STUDY_SECONDS on cuda:0, both
# arms, beam-5 BLEU and chrF of test_2016_flickr) from the pack's data, as many cells as the step's time
# holds. The cells of earlier leases (STUDY_FROM: their study.tar.gz, or a folder holding cells/) are
# unpacked first and not run again, so each lease adds the cells the last one did not reach, then seeds.
# OUT/study.tar.gz comes back with every cell so far, carried ones included, without checkpoints: keep
# it as docs/results-gpu/study.tar.gz, the default STUDY_FROM (docs/GPU-FIRST-RUN.md). Covered by the
# rehearsal, tests/scripts/gpu_check_rehearsal.sh: the same commands, tiny models, two of the six.

study_sizes_device() {  # on a GPU: the recipes as they are; bf16 decoding in large batches
  STUDY_TRAIN_ARGS="" STUDY_TEST_LINES=0 STUDY_TRANSLATE_ARGS="--dtype bf16 --max-tokens 16384" STUDY_MODEL_ARGS=()
  STUDY_SECONDS="${STUDY_SECONDS:-60}"
}
study_sizes_emulated() {  # on the emulator: the same grid, tiny (the e2e step's sizes, 8 heads for MAE)
  STUDY_TRAIN_ARGS="${MT_SIZE[*]} --model.heads 8 --train.max_tokens $E2E_TOKENS --train.warmup_updates 4 --train.log_every 1"
  STUDY_TEST_LINES=$E2E_TEST_LINES STUDY_TRANSLATE_ARGS="${E2E_DECODE[*]}" STUDY_SECONDS="${STUDY_SECONDS:-3}"
  STUDY_MODEL_ARGS=(--train-args-for gpu-moa "--model.attention.name $MOA_NAME"
                    --train-args-for gpu-moe "--model.ffn.experts 4 --model.ffn.hidden 64")
}

cells_in() { find "$1/cells" -name result.tsv 2>/dev/null | wc -l; }

step_study() {
  local out="$WORK/study" rc=0 carried ran left margin=20 r
  rm -rf "$out" && mkdir -p "$out"
  if [[ -f "$STUDY_FROM" ]]; then tar -C "$out" -xzf "$STUDY_FROM" || { note "FAILED: cannot unpack $STUDY_FROM"; return 1; }
  elif [[ -d "$STUDY_FROM/cells" ]]; then cp -r "$STUDY_FROM/cells" "$out/"; fi
  carried=$(cells_in "$out")
  touch "$out/.carried"
  # study.sh stops starting cells margin seconds before the step's end, for the report and the packing.
  # shellcheck disable=SC2086
  bounded env "${RUN_ENV[@]}" bash "$ROOT/scripts/study.sh" --tasks gpu --bin "$BIN" --out "$out" --device cuda \
    --multi30k "$WORK/data/multi30k" --seeds "$STUDY_SEEDS" --seconds-gpu "$STUDY_SECONDS" \
    --time-left $(( STEP_END - SECONDS - margin )) --test-lines "$STUDY_TEST_LINES" --results "$out/RESULTS-GPU.md" \
    --train-args "$STUDY_TRAIN_ARGS" --translate-args "$STUDY_TRANSLATE_ARGS" "${STUDY_MODEL_ARGS[@]}" \
    ${STUDY_MODELS:+--models "$STUDY_MODELS"} || rc=$?
  ran=$(cells_in "$out")
  # Each cell without its checkpoints, run folders of unfinished cells included (their logs tell why).
  tar -C "$out" -czf "$OUT/study.tar.gz" --exclude='*.safetensors' cells $(cd "$out" && ls RESULTS-GPU.md grid.tsv 2>/dev/null) ||
    { note "FAILED: packing the cells"; return 1; }
  for r in $(find "$out/cells" -name result.tsv -newer "$out/.carried" -printf '%T@ %p\n' | sort -n | cut -d' ' -f2-); do
    note "$(awk -F'\t' '{ v[$1] = $2 } END { printf "%s %s s%s: %s updates, %s s, BLEU %s, chrF %s", v["model"], v["arm"],
            v["seed"], v["updates"], v["train_seconds"], v["bleu"], v["chrf"] }' "$r")"
  done
  left=$(sed -n 's/.* cells run, \([0-9]*\) not started.*/\1/p' "$LOGS/$STEP.log" | tail -n 1)
  note "$(( ran - carried )) cells run, $carried carried in, ${left:-?} not started for the time;" \
       "study.tar.gz $(du -k "$OUT/study.tar.gz" | cut -f1) KiB"
  return $rc
}
