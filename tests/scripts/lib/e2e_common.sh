# Helpers shared by the end-to-end scripts of tests/scripts (sourced, not run: ctest runs only
# tests/scripts/*.sh). The sourcing script sets E2E_NAME and BIN (the folder of the programs).
# e2e_fail MESSAGE                     prints "E2E_NAME: FAILED: MESSAGE" and exits 1
# e2e_check_loss_falls RUN_DIR MARGIN  the mean of the last three logged training losses must be below
#                                      the first one minus MARGIN
# e2e_check_resume WORK ARGS...        moe-train ARGS for 40 updates straight (WORK/full) and for 20 then
#                                      --resume to 40 (WORK/part): the logged losses must be identical
# e2e_check_data_weighting WORK ONES TWICE LOG ARGS...
#                                      moe-train ARGS for 20 updates three times (WORK/run-w-*, clip_norm 0): unweighted,
#                                      with ONES (word weights, all 1: the same logged losses; its log must match the
#                                      grep pattern LOG) and with TWICE (sentence weights of 2: twice the losses, as
#                                      Adam takes the same steps); then TWICE with line 7 made -2 must be refused,
#                                      naming the file and line
# e2e_tiny_setup BIN_DIR SHARED_DATA_DIR  for the scripts that train recipes/ci-tiny.yml on 300 Multi30k pairs:
#                                      sets BIN, DATA (the Multi30k folder), WORK (a new temporary folder, removed
#                                      at exit) and TINY (moe-train's arguments: the recipe, the pairs copied to
#                                      WORK, the joint vocabulary WORK/vocab.spm, train.max_tokens 600); exits 77
#                                      (skipped) without the data
# e2e_start_server CKPT LOG ARGS...    starts moe-serve -m CKPT --device cpu ARGS on a free port (stderr to LOG),
#                                      waits for /health; sets SERVER (its pid, also appended to PIDS) and PORT
# e2e_stop_server [PID]                SIGTERM to PID (default SERVER); moe-serve must exit 0 within 60 s

e2e_fail() { echo "$E2E_NAME: FAILED: $*" >&2; exit 1; }

e2e_check_loss_falls() {
  local run="$1" margin="$2" first last
  first="$(grep '"type":"train"' "$run/metrics.jsonl" | sed -E 's/.*"loss":([^,]*),.*/\1/' | head -n 1)"
  last="$(grep '"type":"train"' "$run/metrics.jsonl" | sed -E 's/.*"loss":([^,]*),.*/\1/' | tail -n 3 |
    awk '{s += $1} END {print s / NR}')"
  echo "$E2E_NAME: training loss $first -> $last"
  awk -v a="$first" -v b="$last" -v m="$margin" 'BEGIN {exit !(b < a - m)}' ||
    e2e_fail "the loss did not fall clearly ($first -> $last)"
}

e2e_check_resume() {
  local work="$1"
  shift
  local short=(--train.log_every 5 --train.valid_every 10 --train.save_every 10 --train.keep_last 0)
  "$BIN/moe-train" "$@" "${short[@]}" --run_dir "$work/full" --train.max_updates 40 || e2e_fail "moe-train (full)"
  "$BIN/moe-train" "$@" "${short[@]}" --run_dir "$work/part" --train.max_updates 20 || e2e_fail "moe-train (part)"
  "$BIN/moe-train" "$@" "${short[@]}" --run_dir "$work/part" --train.max_updates 40 --resume ||
    e2e_fail "moe-train --resume"
  curve() { grep -o '"type":"[a-z]*","epoch":[0-9]*,"update":[0-9]*,"loss":[^,]*' "$1/metrics.jsonl"; }
  [[ "$(curve "$work/full" | wc -l)" -ge 8 ]] || e2e_fail "too few metrics lines in the full run"
  diff <(curve "$work/full") <(curve "$work/part") || e2e_fail "the resumed run's losses differ from the uninterrupted run"
  echo "$E2E_NAME: resume reproduces the uninterrupted losses ($(curve "$work/full" | wc -l) lines)"
}

e2e_check_data_weighting() {
  local work="$1" ones="$2" twice="$3" log="$4" arm
  shift 4
  for arm in unweighted ones twice; do
    local extra=()
    [[ $arm == ones ]] && extra=(--data.train.weights "$ones" --data.train.weighting word)
    [[ $arm == twice ]] && extra=(--data.train.weights "$twice")
    "$BIN/moe-train" "$@" --run_dir "$work/run-w-$arm" --train.max_updates 20 --train.valid_every 1000 \
      --train.clip_norm 0 "${extra[@]}" > "$work/train-w-$arm.log" 2>&1 ||
      { cat "$work/train-w-$arm.log"; e2e_fail "moe-train (weights: $arm)"; }
  done
  grep -q "data weighting .*$log" "$work/train-w-ones.log" ||
    e2e_fail "no data-weighting line in the log: $(grep -i weight "$work/train-w-ones.log")"
  losses() { grep '"type":"train"' "$1/metrics.jsonl" | sed -E 's/.*"loss":([^,]*),.*/\1/'; }
  [[ "$(losses "$work/run-w-unweighted" | wc -l)" -eq 2 ]] || e2e_fail "expected 2 logged losses per weighting run"
  diff <(losses "$work/run-w-unweighted") <(losses "$work/run-w-ones") || e2e_fail "weights of 1 changed the logged losses"
  paste <(losses "$work/run-w-unweighted") <(losses "$work/run-w-twice") |
    awk -v name="$E2E_NAME" '{ r = $2 / $1; printf "%s: weights 2: loss %s -> %s (x%.4f)\n", name, $1, $2, r
                                if (r < 1.99 || r > 2.01) bad = 1 } END { exit bad }' ||
    e2e_fail "weights of 2 did not double the logged losses"
  sed -i '7s/^2$/-2/' "$twice"
  "$BIN/moe-train" "$@" --run_dir "$work/run-w-bad" --train.max_updates 1 --data.train.weights "$twice" \
    > "$work/train-w-bad.log" 2>&1 && e2e_fail "a negative weight was accepted"
  grep -q "$(basename "$twice"):7: weight 1 '-2' is not a finite number >= 0" "$work/train-w-bad.log" ||
    e2e_fail "the bad weight's error does not name the file and line: $(tail -n 2 "$work/train-w-bad.log")"
}

e2e_tiny_setup() {
  BIN="${1:?usage: $E2E_NAME.sh BIN_DIR SHARED_DATA_DIR}"
  DATA="${2:?usage: $E2E_NAME.sh BIN_DIR SHARED_DATA_DIR}/multi30k"
  [[ -f "$DATA/train.en" ]] || { echo "$E2E_NAME: no Multi30k data in $DATA: skipped"; exit 77; }
  WORK="$(mktemp -d "${TMPDIR:-/tmp}/moe-$E2E_NAME.XXXXXX")"
  trap 'rm -rf "$WORK"' EXIT
  head -n 300 "$DATA/train.en" > "$WORK/train.en"
  head -n 300 "$DATA/train.de" > "$WORK/train.de"
  TINY=(--config "$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)/recipes/ci-tiny.yml"
        --data.train.src "$WORK/train.en" --data.train.tgt "$WORK/train.de"
        --data.vocab.src "$WORK/vocab.spm" --data.vocab.tgt "$WORK/vocab.spm" --train.max_tokens 600)
}

e2e_start_server() {
  local ckpt="$1" log="$2"
  shift 2
  rm -f "$WORK/port"
  "$BIN/moe-serve" -m "$ckpt" --port 0 --port-file "$WORK/port" --device cpu "$@" 2> "$log" &
  SERVER=$!
  PIDS+=("$SERVER")
  for _ in $(seq 100); do [[ -s "$WORK/port" ]] && break; sleep 0.2; done
  [[ -s "$WORK/port" ]] || { cat "$log"; e2e_fail "moe-serve did not start listening"; }
  PORT="$(cat "$WORK/port")"
  curl -sf "http://127.0.0.1:$PORT/health" > /dev/null || e2e_fail "/health did not answer"
}

e2e_stop_server() {
  local pid="${1:-$SERVER}" status=0
  kill -TERM "$pid"
  timeout 60 tail --pid="$pid" -f /dev/null || e2e_fail "moe-serve did not stop within 60 s of SIGTERM"
  wait "$pid" || status=$?
  [[ $status -eq 0 ]] || e2e_fail "moe-serve exited with $status after SIGTERM"
}
