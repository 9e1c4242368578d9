#!/usr/bin/env bash
# What a full disk or a failing write does to moe-train (training/run_limits.h, the atomic writes of
# common/atomic_file.h), with recipes/ci-tiny.yml on 300 Multi30k pairs (CPU; about 30 s on two cores):
#  1. MOE_FAULT_INJECT=write:3 (ENOSPC) and write:4:EIO fail the state, then the checkpoint, of the second
#     save: the run stops with an error naming the file and the error, the first pair is left byte for byte
#     as it was (the pair of a run that ended there), no temporary file stays, and --resume ends with the
#     uninterrupted run's checkpoint.
#  2. a run folder that cannot be created or written is an error at start, naming it.
#  3. where user namespaces allow a small tmpfs (unshare -rm): a folder without room for two checkpoints is
#     an error at start; a disk that fills up during the run (a file written after the first checkpoint)
#     stops it at the next save with "No space left on device", leaving the first pair, from which --resume
#     (once there is room) ends with the uninterrupted run's checkpoint. Without namespaces this part is
#     skipped (and says so).
# Usage (ctest passes both): disk_faults.sh BIN_DIR SHARED_DATA_DIR. Exit 77 = skipped (no data).
set -euo pipefail
E2E_NAME=disk_faults
source "$(dirname "$0")/lib/e2e_common.sh"
e2e_tiny_setup "$@"
args=("${TINY[@]}" --train.log_every 5 --train.save_every 5 --train.keep_last 0)
train() { "$BIN/moe-train" "${args[@]}" "$@"; }
same_pair() {  # the checkpoint.last pairs of run folders $1 and $2 are byte-identical
  cmp "$1/checkpoint.last.safetensors" "$2/checkpoint.last.safetensors" &&
    cmp "$1/checkpoint.last.state.safetensors" "$2/checkpoint.last.state.safetensors"
}

# References: a run that ends at the first save (update 5), and the whole run (20 updates).
train --run_dir "$WORK/ref5" --train.max_updates 5 > "$WORK/ref5.log" 2>&1 || { cat "$WORK/ref5.log"; e2e_fail "moe-train (5)"; }
train --run_dir "$WORK/full" --train.max_updates 20 > "$WORK/full.log" 2>&1 || { cat "$WORK/full.log"; e2e_fail "moe-train (20)"; }

# 1. Injected write failures at the second save (files: 1 state and 2 checkpoint at update 5, 3 and 4 at 10).
for fault in write:3 write:4:EIO; do
  run="$WORK/fault-${fault//:/-}"
  status=0
  MOE_FAULT_INJECT=$fault train --run_dir "$run" --train.max_updates 20 > "$run.log" 2>&1 || status=$?
  [[ $status -eq 1 ]] || { cat "$run.log"; e2e_fail "$fault: exit status $status, not 1"; }
  file=$([[ $fault == write:3 ]] && echo checkpoint.last.state.safetensors || echo checkpoint.last.safetensors)
  error=$([[ $fault == write:3 ]] && echo "No space left on device" || echo "Input/output error")
  grep -q "saving the checkpoint of update 10 failed: writing $run/$file failed (.*): $error" "$run.log" ||
    { cat "$run.log"; e2e_fail "$fault: no error naming $file and '$error'"; }
  grep -q "the previous checkpoint and its training state are kept" "$run.log" || e2e_fail "$fault: no word on the previous pair"
  same_pair "$WORK/ref5" "$run" || e2e_fail "$fault: the pair left is not the first save's"
  leftovers="$(cd "$run" && ls | grep -E '\.tmp\.|\.previous\.' || true)"
  [[ -z "$leftovers" ]] || e2e_fail "$fault: left behind: $leftovers"
  train --run_dir "$run" --train.max_updates 20 --resume > "$run.resume.log" 2>&1 || { cat "$run.resume.log"; e2e_fail "$fault: --resume"; }
  cmp "$WORK/full/checkpoint.last.safetensors" "$run/checkpoint.last.safetensors" || e2e_fail "$fault: resumed run differs"
  echo "disk_faults: $fault: stopped at the save of update 10 ($error), the first pair kept; --resume ends identically"
done

# 2. A run folder that cannot be created or written.
status=0; train --run_dir /proc/moe-run --train.max_updates 5 > "$WORK/proc.log" 2>&1 || status=$?
[[ $status -eq 1 ]] && grep -q "run_dir /proc/moe-run cannot be created" "$WORK/proc.log" || { cat "$WORK/proc.log"; e2e_fail "no error for an impossible run_dir"; }
status=0; train --run_dir /proc --train.max_updates 5 > "$WORK/proc.log" 2>&1 || status=$?
[[ $status -eq 1 ]] && grep -q "run_dir /proc is not writable" "$WORK/proc.log" || { cat "$WORK/proc.log"; e2e_fail "no error for a run_dir that cannot be written"; }
echo "disk_faults: run folders that cannot be created or written are errors at start"

# 3. Small tmpfs folders, in a user and mount namespace.
if ! unshare -rm true 2> /dev/null; then
  echo "disk_faults: no user namespaces here (unshare -rm): the tmpfs checks are skipped"
  exit 0
fi
export BIN WORK
unshare -rm bash -s -- "${args[@]}" <<'NAMESPACE' || e2e_fail "the tmpfs checks failed (above)"
set -euo pipefail
fail() { echo "disk_faults: FAILED: $*" >&2; exit 1; }
train() { "$BIN/moe-train" "$@"; }
args=("$@")
mkdir -p "$WORK/small" "$WORK/fills"
mount -t tmpfs -o size=4m tmpfs "$WORK/small"
status=0; train "${args[@]}" --run_dir "$WORK/small/run" --train.max_updates 20 > "$WORK/small.log" 2>&1 || status=$?
[[ $status -eq 1 ]] && grep -q "free, less than the .* that two checkpoints need" "$WORK/small.log" || { cat "$WORK/small.log"; fail "no error for a 4 MiB folder"; }
echo "disk_faults: $(grep -o 'run_dir .* has .* free, less than the [^(]*' "$WORK/small.log")"
mount -t tmpfs -o size=8m tmpfs "$WORK/fills"
run="$WORK/fills/run"
train "${args[@]}" --run_dir "$run" --train.max_updates 20 --train.save_every 10 > "$WORK/fills.log" 2>&1 &
job=$!
for _ in $(seq 1 600); do [[ -f "$run/checkpoint.last.safetensors" ]] && break; sleep 0.02; done
dd if=/dev/zero of="$WORK/fills/filler" bs=64k 2> /dev/null || true  # the disk is full now
truncate -s -1M "$WORK/fills/filler"                                  # 1 MiB left: less than a state
status=0; wait $job || status=$?
[[ $status -eq 1 ]] && grep -q "saving the checkpoint of update 20 failed: writing $run/checkpoint.last.state.safetensors failed (write): No space left on device" "$WORK/fills.log" ||
  { cat "$WORK/fills.log"; fail "no error for the full disk"; }
rm "$WORK/fills/filler"
train "${args[@]}" --run_dir "$run" --train.max_updates 20 --train.save_every 10 --resume > "$WORK/fills.resume.log" 2>&1 ||
  { cat "$WORK/fills.resume.log"; fail "--resume after the full disk"; }
grep -q "resumed from .* at update 10" "$WORK/fills.resume.log" || fail "the resumed run did not start from update 10"
cmp "$WORK/full/checkpoint.last.safetensors" "$run/checkpoint.last.safetensors" || fail "the run resumed after the full disk differs"
echo "disk_faults: a disk that filled up stopped the run at the save of update 20; --resume from update 10 ends identically"
NAMESPACE
