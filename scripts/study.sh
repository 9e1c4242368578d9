#!/usr/bin/env bash
# Does each mixture-of-experts family beat its baseline at small scale? Trains and evaluates a grid of
# cells (task x model x arm x seed) on the CPU and writes docs/RESULTS.md (scripts/study_report.py) with
# SVG figures (moe-plot). Resumable: a cell with its result.tsv is not run again.
#   tasks   mt    Multi30k En-De, the CPU demo's model and schedule: recipes/study/mt-*.yml (Transformer,
#                 MAE-7, UNI-MAE-7, NOBCD-7, MoA, MoE FFN; the routers after 2017: Switch top-1 with
#                 capacity 1.25, expert choice in the encoder, shared + fine-grained experts, loss-free
#                 balancing); test BLEU / chrF (test_2016_flickr, beam 5)
#           lm    WikiText-103 sample: recipes/study/lm-*.yml (Transformer LM, MoE FFN, MAE-7; Switch,
#                 shared + fine-grained, loss-free: a decoder-only LM refuses expert choice)
#           lstm  One Billion Word sample: recipes/study/lstm*.yml (LSTM, LSTM-MoE flat and hierarchical)
#   models  a model is its recipe's stem (mt-moe); the first of each task is its baseline
#   arms    updates  every model trains the task's --updates-* updates
#           time     every model trains for the baseline's time: U x (baseline seconds / model seconds),
#                    from the mean training time of the updates arm (the linear decay then ends with the
#                    budget); the baseline's cell is shared by both arms
#   per cell: validation perplexity at the last update, tokens/s, the wall time of moe-train less its
#   validation (its start and checkpoint included), parameters total and active per token
#   (moe-train --dry-run); mixture models (seed 1, updates arm): moe-score experts (gate entropy against
#   ln E, load CV, tokens by PMI) and a moe-plot heatmap.
# usage: scripts/study.sh [--out runs/study] [--bin build/bin] [--data ../shared/data] [--tasks mt,lm,lstm]
#          [--models mt-transformer,mt-moe] [--seeds 1,2,3] [--arms updates,time] [--updates-mt 450]
#          [--updates-lm 300] [--updates-lstm 300] [--test-lines N] [--results docs/RESULTS.md] [--title T]
#          [--cpu-threads N] [--train-args "--train.warmup_updates 0"]
# --test-lines N scores only the first N test lines, --train-args adds moe-train arguments to every cell
# (both for smoke runs; the report says when test lines were cut).
# The grid without the routers' rows took about 2 hours on 2 idle cores on 2026-11-28 (docs/RESULTS.md states
# when and how); the routers' rows add 7 models, about 4 minutes a cell on a 2-core AVX2 machine.
# Covered by tests/scripts/study_smoke.sh (one cell of each task, a few updates, then the report).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT="$ROOT/runs/study"; BIN="$ROOT/build/bin"; DATA="$ROOT/../shared/data"; TASKS="mt,lm,lstm"; MODELS=""
SEEDS="1,2,3"; ARMS="updates,time"; TEST_LINES=0; RESULTS="$ROOT/docs/RESULTS.md"; THREADS=0; TRAIN_ARGS=""
TITLE="Results: the papers' claims at small scale"
declare -A UPDATES=([mt]=450 [lm]=300 [lstm]=300)
declare -A GRID=([mt]="mt-transformer mt-mae-7 mt-uni-mae-7 mt-nobcd-7 mt-moa mt-moe mt-switch mt-expert-choice mt-shared mt-loss-free"
                 [lm]="lm-transformer lm-moe lm-mae-7 lm-switch lm-shared lm-loss-free" [lstm]="lstm lstm-moe lstm-moe-h")
COMMAND="scripts/study.sh $*"
die() { echo "study.sh: $*" >&2; exit 2; }
while (( $# )); do
  case "$1" in
    --out) OUT="$2"; shift 2 ;;
    --bin) BIN="$2"; shift 2 ;;
    --data) DATA="$2"; shift 2 ;;
    --tasks) TASKS="$2"; shift 2 ;;
    --models) MODELS="$2"; shift 2 ;;
    --seeds) SEEDS="$2"; shift 2 ;;
    --arms) ARMS="$2"; shift 2 ;;
    --updates-mt|--updates-lm|--updates-lstm) UPDATES[${1#--updates-}]="$2"; shift 2 ;;
    --test-lines) TEST_LINES="$2"; shift 2 ;;
    --results) RESULTS="$2"; shift 2 ;;
    --title) TITLE="$2"; shift 2 ;;
    --cpu-threads) THREADS="$2"; shift 2 ;;
    --train-args) TRAIN_ARGS="$2"; shift 2 ;;
    -h|--help) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option $1 (try --help)" ;;
  esac
done
for t in ${TASKS//,/ }; do [[ -n "${GRID[$t]:-}" ]] || die "--tasks: unknown task '$t' (mt, lm, lstm)"; done
for a in ${ARMS//,/ }; do [[ "$a" == updates || "$a" == time ]] || die "--arms: unknown arm '$a' (updates, time)"; done
for n in "${UPDATES[@]}" "$TEST_LINES" "$THREADS" ${SEEDS//,/ }; do [[ "$n" =~ ^[0-9]+$ ]] || die "'$n' is not a whole number"; done
for p in moe-train moe-translate moe-score moe-plot moe-vocab; do [[ -x "$BIN/$p" ]] || die "$BIN/$p is missing (build first)"; done
mkdir -p "$OUT/cells" "$OUT/figures" "$OUT/data"
OUT="$(cd "$OUT" && pwd)"
THREAD_ARGS=(--cpu-threads "$THREADS")
log() { echo "study: $(date -u +%H:%M:%S) $*"; }

# --- data, prepared once ---------------------------------------------------------------------------
prepare_data() {
  case "$1" in
    mt)
      [[ -f "$OUT/data/multi30k/vocab.spm" ]] ||
        "$ROOT/data-prep/multi30k.sh" --out "$OUT/data/multi30k" --moe-vocab "$BIN/moe-vocab" --from "$DATA/multi30k"
      local n=$(( TEST_LINES > 0 ? TEST_LINES : 1000000 ))
      head -n "$n" "$OUT/data/multi30k/test.src" > "$OUT/data/multi30k/study-test.src"
      head -n "$n" "$OUT/data/multi30k/test.tgt" > "$OUT/data/multi30k/study-test.ref" ;;
    lm)  # validation on the first 800 paragraphs of wiki.valid.tokens (about a quarter): minutes matter here
      [[ -f "$DATA/wikitext-103-sample/wiki.train.tokens" ]] || die "no WikiText-103 sample in $DATA"
      head -n 800 "$DATA/wikitext-103-sample/wiki.valid.tokens" > "$OUT/data/wikitext-valid.txt" ;;
    lstm)
      local shard="$DATA/1b-word-sample/news.en.heldout-00000-of-00050"
      [[ -f "$shard" ]] || die "no One Billion Word sample in $DATA"
      mkdir -p "$OUT/data/1b-word"
      head -n 5500 "$shard" > "$OUT/data/1b-word/train.txt"
      tail -n +5501 "$shard" > "$OUT/data/1b-word/valid.txt" ;;
  esac
}

# KEYS: the recipe keys a cell overrides (where its data, vocabulary and caches are, and its run folder).
task_keys() {
  local task="$1" run="$2" d="$OUT/data"
  case "$task" in
    mt) KEYS=(--data.train.src "$d/multi30k/train.src" --data.train.tgt "$d/multi30k/train.tgt" \
             --data.valid.src "$d/multi30k/valid.src" --data.valid.tgt "$d/multi30k/valid.tgt" \
             --data.vocab.src "$d/multi30k/vocab.spm" --data.vocab.tgt "$d/multi30k/vocab.spm") ;;
    lm) KEYS=(--data.train.text "$DATA/wikitext-103-sample/wiki.train.tokens" \
             --data.valid.text "$d/wikitext-valid.txt" \
             --data.vocab.path "$d/wikitext-vocab.words" --data.cache_dir "$d") ;;
    lstm) KEYS=(--data.train.text "$d/1b-word/train.txt" --data.valid.text "$d/1b-word/valid.txt" \
               --data.vocab.path "$d/1b-word-vocab.words" --data.cache_dir "$d") ;;
  esac
  KEYS+=(--run_dir "$run")
}

# One update of the baseline before the first cell builds the word vocabularies and token caches, so
# that no cell's time includes building them.
prepare_vocab() {
  local task="$1"
  task_keys "$task" "$OUT/vocab-run"
  "$BIN/moe-train" --config "$ROOT/recipes/study/${GRID[$task]%% *}.yml" "${KEYS[@]}" \
    --train.max_updates 1 --train.valid_every 0 --train.schedule fixed "${THREAD_ARGS[@]}" > "$OUT/vocab-$task.log" 2>&1 ||
    { tail -5 "$OUT/vocab-$task.log" >&2; die "building the $task vocabulary failed (log: $OUT/vocab-$task.log)"; }
  rm -rf "$OUT/vocab-run"
}

# --- one cell ----------------------------------------------------------------------------------------
run_cell() {  # task model arm seed updates
  local task="$1" model="$2" arm="$3" seed="$4" updates="$5"
  local cell="$OUT/cells/$model-$arm-s$seed" recipe="$ROOT/recipes/study/$model.yml"
  [[ -f "$cell/result.tsv" ]] && return 0
  rm -rf "$cell"; mkdir -p "$cell"
  task_keys "$task" "$cell/$model"  # the run folder's name labels moe-plot's curves
  log "$task $model, $arm arm, seed $seed: $updates updates"
  local t0 t1
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086
  "$BIN/moe-train" --config "$recipe" "${KEYS[@]}" --train.seed "$seed" --train.max_updates "$updates" \
    --train.valid_every "$updates" "${THREAD_ARGS[@]}" $TRAIN_ARGS > "$cell/train.log" 2>&1 ||
    { tail -5 "$cell/train.log" >&2; die "training $cell failed (log: $cell/train.log)"; }
  t1=$(date +%s.%N)
  # shellcheck disable=SC2086
  "$BIN/moe-train" --config "$recipe" "${KEYS[@]}" $TRAIN_ARGS --dry-run > "$cell/dry-run.txt" 2>&1 || true
  {
    printf 'task\t%s\nmodel\t%s\narm\t%s\nseed\t%s\nupdates\t%s\n' "$task" "$model" "$arm" "$seed" "$updates"
    # moe-train's wall time less its validation's (metrics.jsonl "seconds" of the valid lines)
    printf 'train_seconds\t%s\n' "$(sed -n 's/.*"type":"valid".*"seconds":\([0-9.e+-]*\).*/\1/p' "$cell/$model/metrics.jsonl" |
      awk -v a="$t0" -v b="$t1" '{ v += $1 } END { printf "%.1f", b - a - v }')"
    printf 'parameters\t%s\n' "$(sed -n 's/^parameters *//p' "$cell/dry-run.txt")"
    if [[ "$task" == mt ]]; then
      "$BIN/moe-translate" -m "$cell/$model/checkpoint.last.safetensors" --beam 5 "${THREAD_ARGS[@]}" -q \
        -i "$OUT/data/multi30k/study-test.src" -o "$cell/test.hyp"
      printf 'bleu\t%s\n' "$("$BIN/moe-score" bleu -r "$OUT/data/multi30k/study-test.ref" -i "$cell/test.hyp" -f json |
                            sed -n 's/^ "score": \(.*\),$/\1/p')"
      printf 'chrf\t%s\n' "$("$BIN/moe-score" chrf -r "$OUT/data/multi30k/study-test.ref" -i "$cell/test.hyp" -f json |
                            sed -n 's/^ "score": \(.*\),$/\1/p')"
    fi
  } > "$cell/result.partial"
  mv "$cell/result.partial" "$cell/result.tsv"
}

# The mean training seconds of a model's updates-arm cells (seeds given), or nothing if none ran.
mean_seconds() {
  local task="$1" model="$2" s sum=0 n=0 v
  for s in ${SEEDS//,/ }; do
    v=$(sed -n 's/^train_seconds\t//p' "$OUT/cells/$model-updates-s$s/result.tsv" 2>/dev/null || true)
    [[ -n "$v" ]] && { sum=$(awk -v a="$sum" -v b="$v" 'BEGIN { print a + b }'); n=$((n + 1)); }
  done
  (( n > 0 )) && awk -v a="$sum" -v n="$n" 'BEGIN { print a / n }'
}

experts_of() {  # the expert analysis of a mixture model's seed-1 updates-arm cell
  local task="$1" model="$2" cell="$OUT/cells/$2-updates-s1" input=()
  [[ -f "$cell/$model/checkpoint.last.safetensors" && ! -f "$cell/experts.jsonl" ]] || return 0
  case "$task" in
    mt) input=(--src "$OUT/data/multi30k/study-test.src" --tgt "$OUT/data/multi30k/study-test.ref") ;;
    lm) input=(-i "$OUT/data/wikitext-valid.txt") ;;
    lstm) input=(-i "$OUT/data/1b-word/valid.txt") ;;
  esac
  "$BIN/moe-score" experts -m "$cell/$model/checkpoint.last.safetensors" "${input[@]}" --unit word -f json \
    "${THREAD_ARGS[@]}" > "$cell/experts.partial" 2> "$cell/experts.log" &&
    mv "$cell/experts.partial" "$cell/experts.jsonl" &&
    "$BIN/moe-plot" experts "$cell/experts.jsonl" -o "$OUT/figures/experts-$model.svg" >> "$cell/experts.log" 2>&1 ||
    log "expert analysis of $task $model failed: $cell/experts.log"
}

START=$(date +%s)
for task in ${TASKS//,/ }; do
  models="${GRID[$task]}"; base="${models%% *}"
  if [[ -n "$MODELS" ]]; then
    keep=""; for m in $models; do [[ ",$MODELS," == *",$m,"* ]] && keep+="$m "; done; models="$keep"
  fi
  [[ -n "$models" ]] || continue
  prepare_data "$task"
  [[ -f "$OUT/data/$task.prepared" ]] || { prepare_vocab "$task"; touch "$OUT/data/$task.prepared"; }
  U="${UPDATES[$task]}"
  # The updates arm first: the time arm is derived from its times (the baseline's cells serve both arms).
  # Seed-major (every model's seed 1, then every model's seed 2, ...): the machine's speed drifts by 10-20%
  # over tens of minutes, and this spreads the drift over all models alike instead of onto one.
  for s in ${SEEDS//,/ }; do for m in $models; do run_cell "$task" "$m" updates "$s" "$U"; done; done
  if [[ ",$ARMS," == *",time,"* ]]; then
    tb=$(mean_seconds "$task" "$base") || die "the time arm of $task needs the baseline ($base) in --models"
    declare -A budget=()
    for m in $models; do
      [[ "$m" == "$base" ]] && continue
      tm=$(mean_seconds "$task" "$m")
      budget[$m]=$(awk -v u="$U" -v a="$tb" -v b="$tm" 'BEGIN { v = int(u * a / b + 0.5); print (v > 1 ? v : 1) }')
    done
    for s in ${SEEDS//,/ }; do
      for m in $models; do [[ "$m" == "$base" ]] || run_cell "$task" "$m" time "$s" "${budget[$m]}"; done
    done
  fi
  for m in $models; do [[ "$m" == "$base" ]] || experts_of "$task" "$m"; done
  # Curves of seed 1 (updates arm), every model of the task in one figure.
  runs=(); for m in $models; do [[ -d "$OUT/cells/$m-updates-s1/$m" ]] && runs+=("$OUT/cells/$m-updates-s1/$m"); done
  if (( ${#runs[@]} )); then
    "$BIN/moe-plot" curves "${runs[@]}" --title "$task: training loss, seed 1, updates arm" \
      -o "$OUT/figures/curves-$task.svg" > /dev/null 2>&1 || log "moe-plot curves for $task failed"
  fi
done
log "grid done in $(( $(date +%s) - START )) s; writing $RESULTS"
for task in "${!GRID[@]}"; do printf '%s\t%s\n' "$task" "${GRID[$task]}"; done > "$OUT/grid.tsv"
python3 "$ROOT/scripts/study_report.py" --cells "$OUT/cells" --grid "$OUT/grid.tsv" --figures "$OUT/figures" --out "$RESULTS" \
  --seeds "$SEEDS" --test-lines "$TEST_LINES" --updates "mt=${UPDATES[mt]},lm=${UPDATES[lm]},lstm=${UPDATES[lstm]}" \
  --command "$COMMAND" --title "$TITLE"
