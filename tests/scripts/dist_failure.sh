#!/usr/bin/env bash
# Failure behaviour of data-parallel training (mpirun -np 2, recipes/ci-tiny.yml on 1,000 Multi30k
# pairs, CPU, dropout 0; about a minute on two cores):
#  1. kill -9 of rank 1 right after a checkpoint: the job fails (non-zero exit) and the launcher's
#     error names the killed rank; restarted with --resume, it continues from checkpoint.last and
#     logs exactly the losses of an uninterrupted 2-rank run, and ends with the same checkpoint.
#  2. a hung rank (SIGSTOP) with --dist.timeout 5: rank 0's watchdog aborts the job with an error
#     naming the collective and the timeout, instead of hanging.
#  3. an error on rank 0 before any collective (a missing training file): the job aborts at once with
#     the error, instead of the other rank waiting for rank 0 forever (it did, in MPI_Comm_dup).
#  4. SIGTERM to rank 1 alone at a random moment of training (SIGNAL_SEED=N repeats it): both ranks stop
#     at the same point (updates of 2 micro-batches: between updates, or dropping an update between its
#     micro-batches) with checkpoint.last saved, the job exits 75, and --resume ends with the
#     uninterrupted run's checkpoint (training/stop_request.h; one process: train_signals.sh).
# Usage (ctest passes both): dist_failure.sh BIN_DIR SHARED_DATA_DIR. Exit 77 = skipped (no mpirun or data).
set -euo pipefail
BIN="${1:?usage: dist_failure.sh BIN_DIR SHARED_DATA_DIR}"
DATA="${2:?usage: dist_failure.sh BIN_DIR SHARED_DATA_DIR}/multi30k"
RECIPE="$(cd "$(dirname "$0")/../.." && pwd)/recipes/ci-tiny.yml"
E2E_NAME=dist_failure
source "$(dirname "$0")/lib/e2e_common.sh"
command -v mpirun > /dev/null || { echo "dist_failure: no mpirun: skipped"; exit 77; }
[[ -f "$DATA/train.en" ]] || { echo "dist_failure: no Multi30k data in $DATA: skipped"; exit 77; }
[[ -x "$BIN/moe-train" ]] || e2e_fail "$BIN/moe-train is missing"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
WORK="$(mktemp -d "${TMPDIR:-/tmp}/moe-dist.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
head -n 1000 "$DATA/train.en" > "$WORK/train.en"; head -n 1000 "$DATA/train.de" > "$WORK/train.de"
args=(--config "$RECIPE" --data.train.src "$WORK/train.en" --data.train.tgt "$WORK/train.de"
      --data.vocab.src "$WORK/vocab.spm" --data.vocab.tgt "$WORK/vocab.spm" --model.dropout 0
      --train.max_tokens 300 --train.update_freq 2 --train.log_every 1 --train.save_every 10 --train.keep_last 0 --dist.backend mpi)
train() { mpirun --oversubscribe -np 2 "$BIN/moe-train" "${args[@]}" "$@"; }
rank_pid() {  # pid of the moe-train of rank $2 whose command line names run folder $1, looked for during 2 s
  # (once, in a full ctest -j2 run, one look right after the job's second update found no rank 1 although it ran)
  local p
  for _ in $(seq 1 40); do
    for p in $(pgrep -f "moe-train .*--run_dir $1( |$)" || true); do
      # the NUL-separated file itself: `tr | grep -q` under pipefail failed whenever grep's early exit hit tr with SIGPIPE
      if grep -qzx "OMPI_COMM_WORLD_RANK=$2" "/proc/$p/environ" 2> /dev/null; then
        echo "$p"
        return 0
      fi
    done
    sleep 0.05
  done
  return 0
}
wait_for_update() {  # wait_for_update RUN_DIR N LOG JOB: until RUN_DIR logs update N; fails with LOG if JOB ended or 120 s passed
  for _ in $(seq 1 2400); do
    grep -q "\"update\":$2," "$1/metrics.jsonl" 2> /dev/null && return 0
    kill -0 "$4" 2> /dev/null || { cat "$3"; e2e_fail "the job of $1 ended before update $2"; }
    sleep 0.05
  done
  cat "$3"; e2e_fail "no update $2 in $1 within 120 s"
}

# The uninterrupted reference.
start=$SECONDS
train --run_dir "$WORK/full" --train.max_updates 30 > "$WORK/full.log" 2>&1 || { cat "$WORK/full.log"; e2e_fail "mpirun (full)"; }
full_seconds=$((SECONDS - start))

# 1. kill -9 rank 1 as soon as the first checkpoint is on disk (the run would go on to 300 updates).
train --run_dir "$WORK/part" --train.max_updates 300 > "$WORK/part.log" 2>&1 &
job=$!
for _ in $(seq 1 1200); do [[ -f "$WORK/part/checkpoint.last.state.safetensors" && -f "$WORK/part/checkpoint.last.safetensors" ]] && break; sleep 0.1; done
[[ -f "$WORK/part/checkpoint.last.safetensors" ]] || { kill $job; e2e_fail "no checkpoint within 120 s"; }
victim="$(rank_pid "$WORK/part" 1)"
[[ -n "$victim" ]] || e2e_fail "rank 1's process not found"
kill -9 "$victim"
status=0; wait $job || status=$?
[[ $status -ne 0 ]] || e2e_fail "the job exited 0 after rank 1 was killed"
grep -Eiq "rank 1 .*(signal 9|killed)" "$WORK/part.log" || { cat "$WORK/part.log"; e2e_fail "no error naming rank 1"; }
echo "dist_failure: rank 1 killed: the job failed with: $(grep -Ei "rank 1 .*(signal 9|killed)" "$WORK/part.log" | head -n 1)"
train --run_dir "$WORK/part" --train.max_updates 30 --resume > "$WORK/resume.log" 2>&1 ||
  { cat "$WORK/resume.log"; e2e_fail "mpirun --resume"; }
grep -q "resumed from" "$WORK/resume.log" || e2e_fail "the restarted job did not resume"
curve() { grep -o '"type":"[a-z]*","epoch":[0-9]*,"update":[0-9]*,"loss":[^,]*' "$1/metrics.jsonl"; }
[[ "$(curve "$WORK/full" | wc -l)" -eq 30 ]] || e2e_fail "the full run logged $(curve "$WORK/full" | wc -l) lines, not 30"
diff <(curve "$WORK/full") <(curve "$WORK/part") || e2e_fail "the resumed run's losses differ from the uninterrupted run"
cmp "$WORK/full/checkpoint.last.safetensors" "$WORK/part/checkpoint.last.safetensors" ||
  e2e_fail "the resumed run's final checkpoint differs from the uninterrupted run's"
echo "dist_failure: $(grep -o 'resumed from .*' "$WORK/resume.log"); losses and final checkpoint identical"

# 2. a hung rank: stop rank 1 once training runs; rank 0's collective times out after 5 s.
train --run_dir "$WORK/hang" --train.max_updates 300 --dist.timeout 5 > "$WORK/hang.log" 2>&1 &
job=$!
wait_for_update "$WORK/hang" 2 "$WORK/hang.log" $job
victim="$(rank_pid "$WORK/hang" 1)"
[[ -n "$victim" ]] || { cat "$WORK/hang.log"; ps -ef | grep '[m]oe-train'; e2e_fail "rank 1's process not found (hang)"; }
kill -STOP "$victim"
start=$SECONDS
status=0; wait $job || status=$?
[[ $status -ne 0 ]] || e2e_fail "the job exited 0 with rank 1 stopped"
grep -q "did not complete within 5 s" "$WORK/hang.log" || { cat "$WORK/hang.log"; e2e_fail "no timeout error"; }
echo "dist_failure: hung rank: the job aborted after $((SECONDS - start)) s with: $(grep -o 'rank 0 of 2: .*' "$WORK/hang.log" | head -n 1)"

# 3. rank 0 fails while rank 1 waits for it outside the watchdog's collectives (setup).
start=$SECONDS
status=0; timeout 120 mpirun --oversubscribe -np 2 "$BIN/moe-train" --config "$RECIPE" --data.train.src "$WORK/missing.en" \
  --data.train.tgt "$WORK/missing.de" --data.vocab.src "$WORK/missing.spm" --data.vocab.tgt "$WORK/missing.spm" \
  --dist.backend mpi --run_dir "$WORK/bad" > "$WORK/bad.log" 2>&1 || status=$?
[[ $status -ne 0 && $status -ne 124 ]] || { cat "$WORK/bad.log"; e2e_fail "the job with a missing file exited $status"; }
grep -q "rank 0 of 2: .*missing.en.*aborting the job" "$WORK/bad.log" || { cat "$WORK/bad.log"; e2e_fail "no error naming the file"; }
echo "dist_failure: an error on rank 0 ended the job after $((SECONDS - start)) s"

# 4. SIGTERM to rank 1 alone, at a random moment of training: the ranks agree on the update to stop after.
SEED="${SIGNAL_SEED:-$((RANDOM * 32768 + RANDOM))}"
RANDOM=$((SEED % 32768))
train --run_dir "$WORK/sig" --train.max_updates 30 > "$WORK/sig.log" 2>&1 &
job=$!
wait_for_update "$WORK/sig" 1 "$WORK/sig.log" $job
delay=$(awk -v r=$RANDOM -v s="$full_seconds" 'BEGIN {printf "%.2f", r / 32768 * 0.6 * s}')
sleep "$delay"
victim="$(rank_pid "$WORK/sig" 1)"
[[ -n "$victim" ]] && kill -TERM "$victim"
status=0; wait $job || status=$?
if [[ $status -eq 75 ]]; then
  grep -q "stopped by a stop signal on another rank after update" "$WORK/sig.log" || { cat "$WORK/sig.log"; e2e_fail "no stop message"; }
  echo "dist_failure: SIGTERM to rank 1 $delay s into training (SIGNAL_SEED=$SEED): $(grep -o 'after update [0-9]*' "$WORK/sig.log")" \
       "$(grep -o 'during update [0-9]*: its 2 micro-batches are dropped' "$WORK/sig.log" | head -n 1)"
else
  [[ $status -eq 0 ]] || { cat "$WORK/sig.log"; e2e_fail "the job exited $status after SIGTERM to rank 1"; }
  echo "dist_failure: SIGTERM $delay s into training came after the run had ended (SIGNAL_SEED=$SEED)"
fi
train --run_dir "$WORK/sig" --train.max_updates 30 --resume > "$WORK/sig.resume.log" 2>&1 ||
  { cat "$WORK/sig.resume.log"; e2e_fail "mpirun --resume after SIGTERM"; }
cmp "$WORK/full/checkpoint.last.safetensors" "$WORK/sig/checkpoint.last.safetensors" ||
  e2e_fail "the run resumed after SIGTERM ends with a checkpoint that differs from the uninterrupted run's"
echo "dist_failure: resumed after SIGTERM: final checkpoint identical"
