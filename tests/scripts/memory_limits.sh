#!/usr/bin/env bash
# moe under an address-space limit (ulimit -v, as SGE's h_vmem or a shell profile sets it; tensor/host_arena.h,
# tensor/host_limits.h, common/cpu_threads.h): at 1, 2 and 12 GB, moe-train trains recipes/ci-tiny.yml for
# 5 updates, moe-translate translates 50 lines (one output line each) and moe-score pairs scores them;
# a model that does not fit in 1 GB stops with an out-of-memory error that names the op, the request, what
# is in use, the limit and the keys that reduce memory; a limit below 512 MiB is an error at start (OpenBLAS
# would otherwise wait forever for its first buffer). About 20 s on two cores.
# Usage (ctest passes both): memory_limits.sh BIN_DIR SHARED_DATA_DIR. Exit 77 = skipped (no data, or an
# AddressSanitizer build).
set -euo pipefail
E2E_NAME=memory_limits
source "$(dirname "$0")/lib/e2e_common.sh"
e2e_tiny_setup "$@"
if grep -q __asan_init "$BIN/moe-train"; then  # scripts/test.sh --sanitize
  echo "memory_limits: an AddressSanitizer build (its shadow memory needs terabytes of address space): skipped"; exit 77
fi
head -n 50 "$DATA/val.en" > "$WORK/val.en"; head -n 50 "$DATA/val.de" > "$WORK/val.de"
args=("${TINY[@]}" --train.log_every 5)
"$BIN/moe-train" "${args[@]}" --run_dir "$WORK/vocab-run" --train.max_updates 1 > /dev/null 2>&1 || e2e_fail "moe-train (vocabulary)"
limited() { (ulimit -v "$1" && exec "${@:2}"); }  # limited KB COMMAND...: COMMAND under ulimit -v KB

for kb in 1000000 2000000 12000000; do
  run="$WORK/run-$kb"
  limited "$kb" "$BIN/moe-train" "${args[@]}" --run_dir "$run" --train.max_updates 5 > "$run.train.log" 2>&1 ||
    { cat "$run.train.log"; e2e_fail "moe-train under ulimit -v $kb"; }
  grep -q "Up. 5 " "$run.train.log" || e2e_fail "moe-train under ulimit -v $kb did not log update 5"
  limited "$kb" "$BIN/moe-translate" -m "$run/checkpoint.last.safetensors" -i "$WORK/val.en" -o "$run.hyp" \
    --beam 2 --max-len-a 0 --max-len-b 20 2> "$run.translate.log" || { cat "$run.translate.log"; e2e_fail "moe-translate under ulimit -v $kb"; }
  [[ "$(wc -l < "$run.hyp")" -eq 50 ]] || e2e_fail "moe-translate under ulimit -v $kb wrote $(wc -l < "$run.hyp") lines"
  limited "$kb" "$BIN/moe-score" pairs -m "$run/checkpoint.last.safetensors" --src "$WORK/val.en" \
    --tgt "$WORK/val.de" > "$run.scores" 2> "$run.score.log" || { cat "$run.score.log"; e2e_fail "moe-score pairs under ulimit -v $kb"; }
  [[ "$(wc -l < "$run.scores")" -eq 50 ]] || e2e_fail "moe-score pairs under ulimit -v $kb wrote $(wc -l < "$run.scores") lines"
  echo "memory_limits: ulimit -v $kb: trained, translated and scored$(grep -ho 'CPU threads: [0-9]* instead of [0-9]*' "$run.train.log" | head -n 1 | sed 's/^/ (/; s/$/)/')"
done

# A model that does not fit: the error names the op, the request, what is in use, the limit and the keys.
status=0
limited 1000000 "$BIN/moe-train" "${args[@]}" --run_dir "$WORK/big" --train.max_updates 3 \
  --train.max_tokens 8000 --model.d_model 512 --model.ffn_dim 2048 > "$WORK/big.log" 2>&1 || status=$?
[[ $status -eq 1 ]] || { cat "$WORK/big.log"; e2e_fail "the model that does not fit: exit status $status, not 1"; }
for part in "of op '" "out of memory on cpu: a request for" "in use by tensors" "(peak " "address space limited to" \
            "lower train.max_tokens (now 8000) and raise train.update_freq (now 1)"; do
  grep -qF "$part" "$WORK/big.log" || { cat "$WORK/big.log"; e2e_fail "the out-of-memory error lacks '$part'"; }
done
echo "memory_limits: $(grep -o 'computing the [^:]*' "$WORK/big.log" | head -n 1): a clear out-of-memory error"

status=0
limited 400000 "$BIN/moe-train" "${args[@]}" --run_dir "$WORK/tiny" --train.max_updates 1 > "$WORK/tiny.log" 2>&1 || status=$?
[[ $status -eq 1 ]] && grep -q "moe needs at least 512 MiB" "$WORK/tiny.log" || { cat "$WORK/tiny.log"; e2e_fail "no clear error under ulimit -v 400000"; }
echo "memory_limits: ulimit -v 400000: an error at start ($(grep -o 'the address space is limited to [0-9]* MiB' "$WORK/tiny.log"))"
