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
#           gpu   Multi30k En-De at the full recipe's size, for a GPU (--device cuda): recipes/study/gpu-*.yml
#                 (Transformer, MAE-7, UNI-MAE-7, NOBCD-7, MoA 8K8E128D, MoE FFN; dropout 0.3, bf16), trained
#                 on a time budget; not in the default --tasks (scripts/gpu-check.sh's study step runs it)
#   models  a model is its recipe's stem (mt-moe); the first of each task is its baseline
#   arms    updates  every model trains the task's --updates-* updates
#           time     every model trains for the baseline's time: U x (baseline seconds / model seconds),
#                    from the mean training time of the updates arm (the linear decay then ends with the
#                    budget); the baseline's cell is shared by both arms
#           gpu: the baseline trains --seconds-gpu seconds and its updates make the updates arm; the time
#           arm trains every model those seconds. Per seed: the baseline, the time arm, the updates arm.
#   per cell: validation perplexity at the last update, tokens/s, the wall time of moe-train less its
#   validation (its start and checkpoint included), parameters total and active per token
#   (moe-train --dry-run); mixture models (seed 1, updates arm): moe-score experts (gate entropy against
#   ln E, load CV, tokens by PMI) and a moe-plot heatmap.
# usage: scripts/study.sh [--out runs/study] [--bin build/bin] [--data ../shared/data] [--tasks mt,lm,lstm]
#          [--models mt-transformer,mt-moe] [--seeds 1,2,3] [--arms updates,time] [--updates-mt 450]
#          [--updates-lm 300] [--updates-lstm 300] [--test-lines N] [--results docs/RESULTS.md] [--title T]
#          [--cpu-threads N] [--train-args "--train.warmup_updates 0"] [--train-args-for MODEL ARGS]
#          [--seconds-gpu 60] [--device cuda] [--translate-args ARGS] [--multi30k DIR] [--time-left SECONDS]
#          [--report-only]
# --test-lines N scores only the first N test lines, --train-args adds moe-train arguments to every cell
# and --train-args-for to one model's (for smoke runs; the report says when test lines were cut).
# --device: moe-train's, moe-translate's and moe-score's device (default: the recipe's, and auto);
# --translate-args adds moe-translate arguments (--dtype bf16 on a GPU, a short --max-len-b in a rehearsal).
# --multi30k DIR: Multi30k as data-prep/multi30k.sh left it (a vocab.spm is built if it has none).
# --time-left: start no cell that would end later than this from the start (by the cells run before).
# --report-only: trains nothing; the report and figures of the cells in --out (those of a GPU, say).
# The grid without the routers' rows took about 2 hours on 2 idle cores on 2026-11-28 (docs/RESULTS.md states
# when and how); the routers' rows add 7 models, about 4 minutes a cell on a 2-core AVX2 machine.
# Covered by tests/scripts/study_smoke.sh (one cell of each task, a few updates, then the report) and, for
# the GPU grid, by tests/scripts/gpu_check_rehearsal.sh (scripts/gpu-check.sh's study step, emulated).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT="$ROOT/runs/study"; BIN="$ROOT/build/bin"; DATA="$ROOT/../shared/data"; TASKS="mt,lm,lstm"; MODELS=""
SEEDS="1,2,3"; ARMS="updates,time"; TEST_LINES=0; RESULTS="$ROOT/docs/RESULTS.md"; THREADS=0; TRAIN_ARGS=""
SECONDS_GPU=60; DEVICE=""; TRANSLATE_ARGS=""; MULTI30K=""; TIME_LEFT=0; REPORT_ONLY=0; declare -A MODEL_ARGS=()
TITLE="Results: the papers' claims at small scale"
declare -A UPDATES=([mt]=450 [lm]=300 [lstm]=300)
declare -A GRID=([mt]="mt-transformer mt-mae-7 mt-uni-mae-7 mt-nobcd-7 mt-moa mt-moe mt-switch mt-expert-choice mt-shared mt-loss-free"
                 [lm]="lm-transformer lm-moe lm-mae-7 lm-switch lm-shared lm-loss-free" [lstm]="lstm lstm-moe lstm-moe-h"
                 [gpu]="gpu-transformer gpu-mae-7 gpu-uni-mae-7 gpu-nobcd-7 gpu-moa gpu-moe")
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
    --train-args-for) MODEL_ARGS[$2]="$3"; shift 3 ;;
    --seconds-gpu) SECONDS_GPU="$2"; shift 2 ;;
    --device) DEVICE="$2"; shift 2 ;;
    --translate-args) TRANSLATE_ARGS="$2"; shift 2 ;;
    --multi30k) MULTI30K="$(cd "$2" && pwd)" || die "--multi30k: no folder $2"; shift 2 ;;
    --time-left) TIME_LEFT="$2"; shift 2 ;;
    --report-only) REPORT_ONLY=1; shift ;;
    -h|--help) sed -n '2,38p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option $1 (try --help)" ;;
  esac
done
for t in ${TASKS//,/ }; do [[ -n "${GRID[$t]:-}" ]] || die "--tasks: unknown task '$t' (mt, lm, lstm, gpu)"; done
for a in ${ARMS//,/ }; do [[ "$a" == updates || "$a" == time ]] || die "--arms: unknown arm '$a' (updates, time)"; done
for n in "${UPDATES[@]}" "$TEST_LINES" "$THREADS" "$SECONDS_GPU" "$TIME_LEFT" ${SEEDS//,/ }; do [[ "$n" =~ ^[0-9]+$ ]] || die "'$n' is not a whole number"; done
# moe-plot makes the figures where it is found (a GPU pack has none: --report-only makes them afterwards);
# moe-vocab is needed only where Multi30k is prepared here.
needs=(moe-plot); (( REPORT_ONLY )) || needs+=(moe-train moe-translate moe-score)
[[ -n "$MULTI30K" ]] || (( REPORT_ONLY )) || needs+=(moe-vocab)
for p in "${needs[@]}"; do
  [[ -x "$BIN/$p" || ( "$p" == moe-plot && -n "$DEVICE" ) ]] || die "$BIN/$p is missing (build first)"
done
mkdir -p "$OUT/cells" "$OUT/figures" "$OUT/data"
OUT="$(cd "$OUT" && pwd)"
THREAD_ARGS=(--cpu-threads "$THREADS")
DEVICE_ARGS=(); [[ -n "$DEVICE" ]] && DEVICE_ARGS=(--device "$DEVICE")
log() { echo "study: $(date -u +%H:%M:%S) $*"; }
plot() { [[ -x "$BIN/moe-plot" ]] && "$BIN/moe-plot" "$@"; }

# --- data, prepared once ---------------------------------------------------------------------------
prepare_data() {
  case "$1" in
    mt|gpu)
      if [[ -n "$MULTI30K" ]]; then  # links to the prepared files: caches and the test subset are written here
        mkdir -p "$OUT/data/multi30k"
        local f
        for f in "$MULTI30K"/*.src "$MULTI30K"/*.tgt "$MULTI30K"/vocab.spm; do [[ -f "$f" ]] && ln -sfn "$f" "$OUT/data/multi30k/"; done
      elif [[ ! -f "$OUT/data/multi30k/vocab.spm" ]]; then
        "$ROOT/data-prep/multi30k.sh" --out "$OUT/data/multi30k" --moe-vocab "$BIN/moe-vocab" --from "$DATA/multi30k"
      fi
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
    mt|gpu) KEYS=(--data.train.src "$d/multi30k/train.src" --data.train.tgt "$d/multi30k/train.tgt" \
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
  local base="${GRID[$task]%% *}"
  # shellcheck disable=SC2086
  "$BIN/moe-train" --config "$ROOT/recipes/study/$base.yml" "${KEYS[@]}" ${DEVICE:+--train.device "$DEVICE"} \
    --train.max_updates 1 --train.max_epochs 0 --train.valid_every 0 --train.schedule fixed "${THREAD_ARGS[@]}" \
    $TRAIN_ARGS ${MODEL_ARGS[$base]:-} > "$OUT/vocab-$task.log" 2>&1 ||
    { tail -5 "$OUT/vocab-$task.log" >&2; die "building the $task vocabulary failed (log: $OUT/vocab-$task.log)"; }
  rm -rf "$OUT/vocab-run"
}

# --- one cell ----------------------------------------------------------------------------------------
field() { sed -n "s/^$1\t//p" "$2" 2>/dev/null || true; }  # FIELD RESULT_TSV: one field of a cell's result

# The seconds a cell would take: its training (SECONDS, or UPDATES at the model's seconds per update in its
# cells so far, else the task's) and the most a cell of the task took besides training (30 s until one ran).
estimate() {  # task model updates [seconds]
  local task="$1" model="$2" updates="$3" train="${4:-}" r over=30 per="" any=""
  for r in "$OUT"/cells/*/result.tsv; do
    [[ -f "$r" && "$(field task "$r")" == "$task" && -n "$(field cell_seconds "$r")" ]] || continue
    over=$(awk -v o="$over" -v c="$(field cell_seconds "$r")" -v t="$(field train_seconds "$r")" 'BEGIN { print (c - t > o ? c - t : o) }')
    any=$(awk -v t="$(field train_seconds "$r")" -v u="$(field updates "$r")" 'BEGIN { print t / u }')
    [[ "$(field model "$r")" == "$model" ]] && per="$any"
  done
  [[ -n "$train" ]] || train=$(awk -v u="$updates" -v p="${per:-${any:-0}}" 'BEGIN { print u * p }')
  awk -v a="$train" -v b="$over" 'BEGIN { printf "%d", a + b + 0.5 }'
}

# run_cell TASK MODEL ARM SEED UPDATES [SECONDS]: trains UPDATES updates, or for SECONDS seconds (then
# UPDATES is what it made), validates, translates and scores; nothing when its result is there, or when
# --time-left would not hold it.
run_cell() {
  local task="$1" model="$2" arm="$3" seed="$4" updates="$5" budget="${6:-}"
  local cell="$OUT/cells/$model-$arm-s$seed" recipe="$ROOT/recipes/study/$model.yml" need limits
  [[ -f "$cell/result.tsv" ]] && return 0
  if (( TIME_LEFT > 0 )); then
    need=$(estimate "$task" "$model" "$updates" "$budget")
    if (( $(date +%s) + need > END )); then
      log "$task $model, $arm arm, seed $seed: not started (about $need s; $(( END - $(date +%s) )) s left)"
      NOT_STARTED=$(( NOT_STARTED + 1 )); return 0
    fi
  fi
  rm -rf "$cell"; mkdir -p "$cell"
  task_keys "$task" "$cell/$model"  # the run folder's name labels moe-plot's curves
  if [[ -n "$budget" ]]; then
    log "$task $model, $arm arm, seed $seed: $budget s"
    limits=(--train.max_updates 0 --train.max_epochs 0 --train.valid_every 0
            --train.max_minutes "$(awk -v s="$budget" 'BEGIN { printf "%.6g", s / 60 }')")
  else
    log "$task $model, $arm arm, seed $seed: $updates updates"
    limits=(--train.max_updates "$updates" --train.valid_every "$updates")
  fi
  # The GPU grid saves once, at the end: a save of the full model in its budget would be time not trained.
  [[ "$task" == gpu ]] && limits+=(--train.save_every 0 --train.keep_last 1)
  local t0 t1
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086
  "$BIN/moe-train" --config "$recipe" "${KEYS[@]}" --train.seed "$seed" "${limits[@]}" ${DEVICE:+--train.device "$DEVICE"} \
    "${THREAD_ARGS[@]}" $TRAIN_ARGS ${MODEL_ARGS[$model]:-} > "$cell/train.log" 2>&1 ||
    { tail -5 "$cell/train.log" >&2; die "training $cell failed (log: $cell/train.log)"; }
  t1=$(date +%s.%N)
  # shellcheck disable=SC2086
  "$BIN/moe-train" --config "$recipe" "${KEYS[@]}" $TRAIN_ARGS ${MODEL_ARGS[$model]:-} --dry-run > "$cell/dry-run.txt" 2>&1 || true
  # The updates made: the last validation's (the end of training).
  [[ -n "$budget" ]] && updates=$(sed -n 's/.*"type":"valid".*"update":\([0-9]*\).*/\1/p' "$cell/$model/metrics.jsonl" | tail -n 1)
  {
    printf 'task\t%s\nmodel\t%s\narm\t%s\nseed\t%s\nupdates\t%s\n' "$task" "$model" "$arm" "$seed" "$updates"
    [[ -n "$budget" ]] && printf 'budget_seconds\t%s\n' "$budget"
    # moe-train's wall time less its validation's (metrics.jsonl "seconds" of the valid lines)
    printf 'train_seconds\t%s\n' "$(sed -n 's/.*"type":"valid".*"seconds":\([0-9.e+-]*\).*/\1/p' "$cell/$model/metrics.jsonl" |
      awk -v a="$t0" -v b="$t1" '{ v += $1 } END { printf "%.1f", b - a - v }')"
    printf 'parameters\t%s\n' "$(sed -n 's/^parameters *//p' "$cell/dry-run.txt")"
    if [[ "$task" == mt || "$task" == gpu ]]; then
      # shellcheck disable=SC2086
      "$BIN/moe-translate" -m "$cell/$model/checkpoint.last.safetensors" --beam 5 "${THREAD_ARGS[@]}" "${DEVICE_ARGS[@]}" $TRANSLATE_ARGS -q \
        -i "$OUT/data/multi30k/study-test.src" -o "$cell/test.hyp"
      printf 'bleu\t%s\n' "$("$BIN/moe-score" bleu -r "$OUT/data/multi30k/study-test.ref" -i "$cell/test.hyp" -f json |
                            sed -n 's/^ "score": \(.*\),$/\1/p')"
      printf 'chrf\t%s\n' "$("$BIN/moe-score" chrf -r "$OUT/data/multi30k/study-test.ref" -i "$cell/test.hyp" -f json |
                            sed -n 's/^ "score": \(.*\),$/\1/p')"
    fi
    printf 'cell_seconds\t%s\n' "$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')"
  } > "$cell/result.partial"
  mv "$cell/result.partial" "$cell/result.tsv"
  RAN=$(( RAN + 1 ))
  # A GPU cell's checkpoint stays on the device: its experts are scored now.
  if [[ "$task" == gpu && "$arm" == updates && "$seed" == 1 && "$model" != "${GRID[gpu]%% *}" ]]; then experts_of "$task" "$model"; fi
}

# The mean training seconds of a model's updates-arm cells (seeds given), or nothing if none ran.
mean_seconds() {
  local task="$1" model="$2" s sum=0 n=0 v
  for s in ${SEEDS//,/ }; do
    v=$(field train_seconds "$OUT/cells/$model-updates-s$s/result.tsv")
    [[ -n "$v" ]] && { sum=$(awk -v a="$sum" -v b="$v" 'BEGIN { print a + b }'); n=$((n + 1)); }
  done
  (( n > 0 )) && awk -v a="$sum" -v n="$n" 'BEGIN { print a / n }'
}

# The expert analysis of a mixture model's seed-1 updates-arm cell (where its checkpoint is), and its figure.
experts_of() {
  local task="$1" model="$2" cell="$OUT/cells/$2-updates-s1" input=()
  if [[ -f "$cell/experts.jsonl" || ! -f "$cell/$model/checkpoint.last.safetensors" ]]; then experts_figure "$model"; return 0; fi
  case "$task" in
    mt|gpu) input=(--src "$OUT/data/multi30k/study-test.src" --tgt "$OUT/data/multi30k/study-test.ref") ;;
    lm) input=(-i "$OUT/data/wikitext-valid.txt") ;;
    lstm) input=(-i "$OUT/data/1b-word/valid.txt") ;;
  esac
  "$BIN/moe-score" experts -m "$cell/$model/checkpoint.last.safetensors" "${input[@]}" --unit word -f json \
    "${THREAD_ARGS[@]}" "${DEVICE_ARGS[@]}" > "$cell/experts.partial" 2> "$cell/experts.log" &&
    mv "$cell/experts.partial" "$cell/experts.jsonl" || { log "expert analysis of $task $model failed: $cell/experts.log"; return 0; }
  experts_figure "$model"
}
experts_figure() {  # MODEL: the heatmap of its experts.jsonl, where moe-plot is
  local cell="$OUT/cells/$1-updates-s1"
  [[ -f "$cell/experts.jsonl" && -x "$BIN/moe-plot" ]] || return 0
  plot experts "$cell/experts.jsonl" -o "$OUT/figures/experts-$1.svg" >> "$cell/experts.log" 2>&1 ||
    log "the experts figure of $1 failed: $cell/experts.log"
}

# The GPU grid, seed by seed: the baseline for --seconds-gpu seconds (its cell serves both arms, and its
# updates make the updates arm), the time arm (every model those seconds), then the updates arm.
gpu_grid() {  # MODELS BASELINE
  local m s ub
  for s in ${SEEDS//,/ }; do
    if [[ " $1 " == *" $2 "* ]]; then run_cell gpu "$2" updates "$s" 0 "$SECONDS_GPU"; fi
    ub=$(field updates "$OUT/cells/$2-updates-s$s/result.tsv")
    for m in $1; do
      if [[ "$m" != "$2" && ",$ARMS," == *",time,"* ]]; then run_cell gpu "$m" time "$s" 0 "$SECONDS_GPU"; fi
    done
    for m in $1; do
      if [[ "$m" != "$2" && -n "$ub" && ",$ARMS," == *",updates,"* ]]; then run_cell gpu "$m" updates "$s" "$ub"; fi
    done
  done
}

updates_text() {  # the equal-updates arm of each task asked for: "mt=450,gpu=the baseline's in the time budget"
  local t out=()
  for t in ${TASKS//,/ }; do
    if [[ "$t" == gpu ]]; then out+=("gpu=the baseline's in the time budget"); else out+=("$t=${UPDATES[$t]}"); fi
  done
  (IFS=,; echo "${out[*]}")
}

START=$(date +%s); END=$(( START + TIME_LEFT )); RAN=0; NOT_STARTED=0
# CPU tasks: the updates arm first: the time arm is derived from its times (the baseline's cells serve both
# arms). Seed-major (every model's seed 1, then every model's seed 2, ...): the machine's speed drifts by
# 10-20% over tens of minutes, and this spreads the drift over all models alike instead of onto one.
cpu_grid() {  # TASK MODELS BASELINE
  local task="$1" models="$2" base="$3" U="${UPDATES[$1]}" s m tb tm
  for s in ${SEEDS//,/ }; do for m in $models; do run_cell "$task" "$m" updates "$s" "$U"; done; done
  [[ ",$ARMS," == *",time,"* ]] || return 0
  tb=$(mean_seconds "$task" "$base") || die "the time arm of $task needs the baseline ($base) in --models"
  declare -A budget=()
  for m in $models; do
    [[ "$m" == "$base" ]] && continue
    tm=$(mean_seconds "$task" "$m") || continue  # not run (--time-left)
    budget[$m]=$(awk -v u="$U" -v a="$tb" -v b="$tm" 'BEGIN { v = int(u * a / b + 0.5); print (v > 1 ? v : 1) }')
  done
  for s in ${SEEDS//,/ }; do
    for m in $models; do
      if [[ "$m" != "$base" && -n "${budget[$m]:-}" ]]; then run_cell "$task" "$m" time "$s" "${budget[$m]}"; fi
    done
  done
}

for task in ${TASKS//,/ }; do
  models="${GRID[$task]}"; base="${models%% *}"
  if [[ -n "$MODELS" ]]; then
    keep=""; for m in $models; do [[ ",$MODELS," == *",$m,"* ]] && keep+="$m "; done; models="$keep"
  fi
  [[ -n "$models" ]] || continue
  if (( ! REPORT_ONLY )); then
    prepare_data "$task"
    [[ -f "$OUT/data/$task.prepared" ]] || { prepare_vocab "$task"; touch "$OUT/data/$task.prepared"; }
    if [[ "$task" == gpu ]]; then gpu_grid "$models" "$base"; else cpu_grid "$task" "$models" "$base"; fi
  fi
  for m in $models; do [[ "$m" == "$base" ]] || experts_of "$task" "$m"; done
  # Curves of seed 1 (updates arm), every model of the task in one figure.
  runs=(); for m in $models; do [[ -d "$OUT/cells/$m-updates-s1/$m" ]] && runs+=("$OUT/cells/$m-updates-s1/$m"); done
  if (( ${#runs[@]} )) && [[ -x "$BIN/moe-plot" ]]; then
    plot curves "${runs[@]}" --title "$task: training loss, seed 1, updates arm" \
      -o "$OUT/figures/curves-$task.svg" > /dev/null 2>&1 || log "moe-plot curves for $task failed"
  fi
done
(( TIME_LEFT == 0 )) || log "$RAN cells run, $NOT_STARTED not started for the time left"
log "grid done in $(( $(date +%s) - START )) s; writing $RESULTS"
for task in "${!GRID[@]}"; do printf '%s\t%s\n' "$task" "${GRID[$task]}"; done > "$OUT/grid.tsv"
python3 "$ROOT/scripts/study_report.py" --cells "$OUT/cells" --grid "$OUT/grid.tsv" --figures "$OUT/figures" --out "$RESULTS" \
  --seeds "$SEEDS" --test-lines "$TEST_LINES" --updates "$(updates_text)" \
  --command "$COMMAND" --title "$TITLE"
