#!/usr/bin/env bash
# A model that does not fit in GPU memory, under the CUDA emulator with a small device
# (MOE_EMU_DEVICE_MEMORY=40MiB, emu/runtime/memory.cpp): recipes/ci-tiny.yml trained 3 updates on the CPU,
# then resumed on cuda:0, stops at its first update with an out-of-memory error that names the op and its
# output, the size asked, the memory in use and the peak, and the keys that reduce memory (train.max_tokens,
# train.update_freq, train.dtype); checkpoint.last and its state are left byte for byte as they were, and
# resumed on the CPU they end the run with the uninterrupted run's checkpoint. A malformed
# MOE_EMU_DEVICE_MEMORY is an error naming it. About 10 s on two cores.
# Usage (ctest passes both): gpu_memory.sh BIN_DIR SHARED_DATA_DIR. Exit 77 = skipped: not the CUDA emulator
# (a GPU's memory is what it is) or no data.
set -euo pipefail
E2E_NAME=gpu_memory
source "$(dirname "$0")/lib/e2e_common.sh"
e2e_tiny_setup "$@"
[[ "$("$BIN/moe-bench" --has-cuda 2> /dev/null || true)" == *emulated* ]] || { echo "gpu_memory: not the CUDA emulator: skipped"; exit 77; }
args=("${TINY[@]}" --train.log_every 1 --train.save_every 3 --train.max_updates 6)
"$BIN/moe-train" "${args[@]}" --run_dir "$WORK/full" > "$WORK/full.log" 2>&1 || { cat "$WORK/full.log"; e2e_fail "moe-train (cpu)"; }
"$BIN/moe-train" "${args[@]}" --run_dir "$WORK/part" --train.max_updates 3 > "$WORK/part.log" 2>&1 || { cat "$WORK/part.log"; e2e_fail "moe-train (3 updates)"; }
cp "$WORK/part/checkpoint.last.safetensors" "$WORK/part/checkpoint.last.state.safetensors" "$WORK/"

status=0
MOE_EMU_DEVICE_MEMORY=40MiB "$BIN/moe-train" "${args[@]}" --run_dir "$WORK/part" --train.device cuda --resume \
  > "$WORK/cuda.log" 2>&1 || status=$?
[[ $status -eq 1 ]] || { cat "$WORK/cuda.log"; e2e_fail "on a 40 MiB device: exit status $status, not 1"; }
for part in "of op '" "out of memory on cuda:0: a request for" "in use by tensors" "(peak " "free on the device" \
            "lower train.max_tokens (now 600) and raise train.update_freq (now 1)" "train.dtype bf16 (now f32)"; do
  grep -qF "$part" "$WORK/cuda.log" || { cat "$WORK/cuda.log"; e2e_fail "the out-of-memory error lacks '$part'"; }
done
echo "gpu_memory: $(grep -o 'computing the [^:]*: out of memory on cuda:0: a request for [^)]*)' "$WORK/cuda.log")"
for f in checkpoint.last.safetensors checkpoint.last.state.safetensors; do
  cmp "$WORK/$f" "$WORK/part/$f" || e2e_fail "$f changed in the run that ran out of memory"
done
"$BIN/moe-train" "${args[@]}" --run_dir "$WORK/part" --resume > "$WORK/resume.log" 2>&1 || { cat "$WORK/resume.log"; e2e_fail "--resume on the cpu"; }
cmp "$WORK/full/checkpoint.last.safetensors" "$WORK/part/checkpoint.last.safetensors" || e2e_fail "the resumed run differs"
echo "gpu_memory: the checkpoint pair was left as it was; resumed on the cpu, the run ends identically"

status=0
MOE_EMU_DEVICE_MEMORY=lots "$BIN/moe-train" "${args[@]}" --run_dir "$WORK/bad" --train.device cuda > "$WORK/bad.log" 2>&1 || status=$?
[[ $status -ne 0 ]] && grep -q "MOE_EMU_DEVICE_MEMORY='lots' is not a size" "$WORK/bad.log" || { cat "$WORK/bad.log"; e2e_fail "no error for MOE_EMU_DEVICE_MEMORY=lots"; }
echo "gpu_memory: MOE_EMU_DEVICE_MEMORY=lots: $(grep -o "MOE_EMU_DEVICE_MEMORY='lots' is not a size[^\\n]*" "$WORK/bad.log")"
