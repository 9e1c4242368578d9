#!/usr/bin/env bash
# Stopping on signals (training/stop_request.h, common/stop_signal.h), with recipes/ci-tiny.yml trained
# on 300 Multi30k pairs (CPU, dropout on, 30 updates; about 40 s in all on two cores):
#  1. moe-train gets SIGTERM at two random moments of its training: it exits with status 75 after saving
#     checkpoint.last (0 when the run ended first), and --resume ends with a checkpoint and training state
#     byte-identical to an uninterrupted run's. (With 2 MPI ranks: tests/scripts/dist_failure.sh.)
#     With train.update_freq 30, SIGTERM in the middle of an update drops it (stopping between micro-batches)
#     and --resume repeats it: the same byte-identical end.
#  2. a second SIGINT ends moe-train at once (status 130); with train.on_signal exit, SIGTERM does (143).
#  3. moe-translate on SIGTERM: status 75, and the lines written are complete and the first lines of the
#     uninterrupted output; a SIGINT it ignores (a background job of a script) does not stop it.
#  4. moe-score pairs on SIGTERM: status 75 and nothing on stdout.
# SIGNAL_SEED=N repeats a run's random moments (the seed is printed).
# Usage (ctest passes both): train_signals.sh BIN_DIR SHARED_DATA_DIR. Exit 77 = skipped (no data).
set -euo pipefail
E2E_NAME=train_signals
source "$(dirname "$0")/lib/e2e_common.sh"
e2e_tiny_setup "$@"
SEED="${SIGNAL_SEED:-$((RANDOM * 32768 + RANDOM))}"
RANDOM=$((SEED % 32768))
echo "train_signals: SIGNAL_SEED=$SEED"
args=("${TINY[@]}" --train.max_updates 30 --train.log_every 1 --train.save_every 10 --train.keep_last 0)
now() { date +%s.%N; }
wait_for_training() {  # until the run in $1 has logged an update (its signal handlers are installed)
  for _ in $(seq 1 600); do grep -q '"update":' "$1/metrics.jsonl" 2> /dev/null && return 0; sleep 0.05; done
  e2e_fail "no update logged in $1 within 30 s"
}
wait_status() { status=0; wait "$1" || status=$?; }  # the exit status of job $1 in $status
wait_for_handler() {  # until process $1 catches SIGTERM (bit 15 of SigCgt): its stop handlers are installed
  for _ in $(seq 1 600); do
    (( 0x$(awk '/^SigCgt/ {print $2}' "/proc/$1/status" 2> /dev/null || echo 0) & 0x4000 )) && return 0
    sleep 0.05
  done
  e2e_fail "process $1 installed no SIGTERM handler within 30 s"
}

reference_run() {  # reference_run DIR ARGS...: an uninterrupted run; $elapsed: seconds from its first update to its end
  local dir="$1" start
  shift
  "$BIN/moe-train" "$@" --run_dir "$dir" > "$dir.log" 2>&1 &
  job=$!
  wait_for_training "$dir"
  start=$(now)
  wait_status $job
  [[ $status -eq 0 ]] || { cat "$dir.log"; e2e_fail "the uninterrupted run in $dir"; }
  elapsed=$(awk -v a="$start" -v b="$(now)" 'BEGIN {printf "%.3f", b - a}')
}

# The uninterrupted reference (it builds the vocabulary the others reuse); its training time bounds the delays.
reference_run "$WORK/full" "${args[@]}"
span=$(awk -v e="$elapsed" 'BEGIN {printf "%.2f", 0.8 * e}')

# 1. SIGTERM at random moments, then --resume.
for k in 1 2; do
  run="$WORK/part$k"
  "$BIN/moe-train" "${args[@]}" --run_dir "$run" > "$run.log" 2>&1 &
  job=$!
  wait_for_training "$run"
  delay=$(awk -v r=$RANDOM -v s="$span" 'BEGIN {printf "%.2f", r / 32768 * s}')  # in [0, 0.8 of the reference's time)
  sleep "$delay"
  kill -TERM $job 2> /dev/null || true
  wait_status $job
  case "$status" in
    75) grep -q "stopped by SIGTERM after update" "$run.log" || { cat "$run.log"; e2e_fail "no stop message"; }
        echo "train_signals: SIGTERM $delay s into training: $(grep -o 'stopped by SIGTERM after update [0-9]*' "$run.log")" ;;
    0) echo "train_signals: SIGTERM $delay s into training came after the run had ended" ;;
    *) cat "$run.log"; e2e_fail "moe-train exited $status after SIGTERM" ;;
  esac
  "$BIN/moe-train" "${args[@]}" --run_dir "$run" --resume > "$run.resume.log" 2>&1 ||
    { cat "$run.resume.log"; e2e_fail "moe-train --resume"; }
  for f in checkpoint.last.safetensors checkpoint.last.state.safetensors; do
    cmp "$WORK/full/$f" "$run/$f" || e2e_fail "$f of the resumed run differs from the uninterrupted run's"
  done
done
echo "train_signals: both resumed runs end with the uninterrupted run's checkpoint and state, byte for byte"

# 1b. Between micro-batches: an update of 30 batches (train.update_freq) gets SIGTERM in its middle; it is
#     dropped (the state saved is the previous update's), and --resume repeats it, byte for byte.
long=("${TINY[@]}" --train.max_tokens 100 --train.update_freq 30 --train.max_updates 3 --train.log_every 1
      --train.save_every 1 --train.keep_last 0 --train.valid_every 0)
reference_run "$WORK/long" "${long[@]}"
third=$(awk -v e="$elapsed" 'BEGIN {printf "%.2f", e / 6}')  # a third of one update
"$BIN/moe-train" "${long[@]}" --run_dir "$WORK/longpart" > "$WORK/longpart.log" 2>&1 &
job=$!
wait_for_training "$WORK/longpart"
sleep "$third"
kill -TERM $job 2> /dev/null || true
wait_status $job
[[ $status -eq 75 ]] || { cat "$WORK/longpart.log"; e2e_fail "update_freq 30: moe-train exited $status after SIGTERM, not 75"; }
grep -q "SIGTERM arrived during update 2: its 30 micro-batches are dropped" "$WORK/longpart.log" &&
  grep -q "stopped by SIGTERM after update 1" "$WORK/longpart.log" ||
  { cat "$WORK/longpart.log"; e2e_fail "update_freq 30: SIGTERM $third s into update 2 did not stop it between micro-batches"; }
"$BIN/moe-train" "${long[@]}" --run_dir "$WORK/longpart" --resume > "$WORK/longpart.resume.log" 2>&1 ||
  { cat "$WORK/longpart.resume.log"; e2e_fail "moe-train --resume after a dropped update"; }
for f in checkpoint.last.safetensors checkpoint.last.state.safetensors; do
  cmp "$WORK/long/$f" "$WORK/longpart/$f" || e2e_fail "$f after a dropped update and --resume differs from the uninterrupted run's"
done
echo "train_signals: SIGTERM $third s into an update of 30 micro-batches dropped it; --resume ends byte-identical"

# 2. A second SIGINT exits at once (SIGINT's default disposition restored: a script's background jobs ignore it);
#    train.on_signal exit leaves SIGTERM fatal.
# The model is widened (FFN 8192) so an update takes a few tenths of a second: the second SIGINT must
# arrive before the first one's safe point, the end of the update in progress (a tiny update of 40 ms
# ended the run gracefully, 75, before it on a loaded CI machine).
env --default-signal=INT "$BIN/moe-train" "${args[@]}" --model.d_model 256 --model.ffn_dim 8192 --run_dir "$WORK/int" \
  > "$WORK/int.log" 2>&1 &
job=$!
wait_for_training "$WORK/int"
kill -INT $job
# The second SIGINT only after the handler has run (its line is in the log): two SIGINTs sent while the
# process waits for a core are merged into one by the kernel, and the run then stops gracefully (75).
for _ in $(seq 1 1000); do grep -q "press Ctrl-C again" "$WORK/int.log" && break; sleep 0.01; done
kill -INT $job 2> /dev/null || true
wait_status $job
[[ $status -eq 130 ]] || { cat "$WORK/int.log"; e2e_fail "two SIGINTs: exit status $status, not 130"; }
grep -q "press Ctrl-C again to exit at once" "$WORK/int.log" || e2e_fail "no line after the first SIGINT"
"$BIN/moe-train" "${args[@]}" --run_dir "$WORK/exit" --train.on_signal exit > "$WORK/exit.log" 2>&1 &
job=$!
wait_for_training "$WORK/exit"
kill -TERM $job
wait_status $job
[[ $status -eq 143 ]] || { cat "$WORK/exit.log"; e2e_fail "train.on_signal exit: exit status $status, not 143"; }
echo "train_signals: a second SIGINT exits at once (130); on_signal exit ends at SIGTERM (143)"

# 3. moe-translate: complete lines only, the uninterrupted output's first ones.
model="$WORK/full/checkpoint.last.safetensors"
translate=("$BIN/moe-translate" -m "$model" -i "$DATA/val.en" --beam 2 --max-len-a 0 --max-len-b 20 --chunk-lines 20 -q)
"${translate[@]}" -o "$WORK/ref.de" > /dev/null 2>&1 &  # a background job ignores SIGINT: so does moe-translate
job=$!
sleep 0.5
kill -INT $job 2> /dev/null || true
wait_status $job
[[ $status -eq 0 && "$(wc -l < "$WORK/ref.de")" -eq "$(wc -l < "$DATA/val.en")" ]] ||
  e2e_fail "moe-translate with an ignored SIGINT exited $status after $(wc -l < "$WORK/ref.de") lines"
"${translate[@]}" -o "$WORK/part.de" 2> "$WORK/part.err" &
job=$!
for _ in $(seq 1 600); do [[ "$(cat "$WORK/part.de" 2> /dev/null | wc -l)" -ge 40 ]] && break; sleep 0.02; done
kill -TERM $job
wait_status $job
[[ $status -eq 75 ]] || { cat "$WORK/part.err"; e2e_fail "moe-translate exited $status after SIGTERM, not 75"; }
lines=$(wc -l < "$WORK/part.de")
[[ $lines -ge 40 && $lines -lt "$(wc -l < "$WORK/ref.de")" ]] || e2e_fail "moe-translate wrote $lines lines before stopping"
[[ "$(tail -c 1 "$WORK/part.de" | od -An -c | tr -d ' ')" == '\n' ]] || e2e_fail "the last line written is incomplete"
head -n "$lines" "$WORK/ref.de" | cmp -s - "$WORK/part.de" || e2e_fail "the lines written differ from the uninterrupted output"
grep -q "the translations of the first $lines input line(s) are written" "$WORK/part.err" || { cat "$WORK/part.err"; e2e_fail "no stop message"; }
echo "train_signals: moe-translate stopped by SIGTERM after $lines complete lines, the uninterrupted output's"

# 4. moe-score pairs writes its lines only at the end: a stop writes nothing. All 29,000 pairs take about 5 s
# on two cores, ten times the delay (3,000 took 0.5 s, and a run sometimes ended before its signal).
"$BIN/moe-score" pairs -m "$model" --src "$DATA/train.en" --tgt "$DATA/train.de" --max-tokens 300 > "$WORK/pairs.out" 2> "$WORK/pairs.err" &
job=$!
wait_for_handler $job
sleep 0.5
kill -TERM $job 2> /dev/null || { cat "$WORK/pairs.err"; e2e_fail "moe-score pairs ended before its SIGTERM (0.5 s)"; }
wait_status $job
[[ $status -eq 75 && ! -s "$WORK/pairs.out" ]] || { cat "$WORK/pairs.err"; e2e_fail "moe-score pairs: status $status, $(wc -c < "$WORK/pairs.out") bytes written"; }
grep -q "moe-score pairs: stopped by SIGTERM; nothing was written" "$WORK/pairs.err" || e2e_fail "no stop message from moe-score"
echo "train_signals: moe-score pairs stopped by SIGTERM with nothing written"
