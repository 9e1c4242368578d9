#!/usr/bin/env bash
# The rehearsal of a lent GPU's first call: scripts/gpu-check.sh --emulate runs every step of the real
# check, at tiny sizes, on the CUDA emulator, so that no script bug costs device time. Checks that each
# step ran and passed (the NCCL step says the emulator has none), that every model of the e2e step
# trained on cuda:0 with the CPU's losses and was scored, that moe-serve answered 1 and 2 clients, that
# the study step ran the GPU grid's cells of two of its models (one seed) and packed them without
# checkpoints, that OUT holds only summary.md, logs.tar.gz and study.tar.gz (a device call brings back at
# most 8 files) and that the summary is printed last; then that the study step carrying those cells in
# runs none again, that a budget too small for a step skips it and says so, and that a sanitizer tag
# without tests fails.
# Usage (ctest passes both): gpu_check_rehearsal.sh BIN_DIR SHARED_DATA_DIR. Exit 77 = skipped: not a
# CUDA-emulator build, or no data.
set -euo pipefail
BIN="$(cd "${1:?usage: gpu_check_rehearsal.sh BIN_DIR SHARED_DATA_DIR}" && pwd)"
DATA="${2:?usage: gpu_check_rehearsal.sh BIN_DIR SHARED_DATA_DIR}"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
E2E_NAME=gpu_check_rehearsal
source "$(dirname "$0")/lib/e2e_common.sh"
grep -q '^MOE_CUDA_EMU:BOOL=ON' "$BIN/../CMakeCache.txt" 2>/dev/null || { echo "$E2E_NAME: not an emulator build: skipped"; exit 77; }
[[ -f "$DATA/multi30k/train.en" ]] || { echo "$E2E_NAME: no Multi30k data in $DATA: skipped"; exit 77; }
WORK="$(mktemp -d "${TMPDIR:-/tmp}/moe-gpu-rehearsal-test.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

STUDY=(--study-models gpu-transformer,gpu-moe --study-seeds 1)
"$ROOT/scripts/gpu-check.sh" --emulate "$WORK/out" --bin "$BIN" --data "$DATA" --budget 1800 "${STUDY[@]}" > "$WORK/stdout" 2>&1 ||
  { cat "$WORK/stdout"; e2e_fail "gpu-check.sh --emulate failed"; }
S="$WORK/out/summary.md"
cat "$S"
[[ "$(ls "$WORK/out")" == "$(printf 'logs.tar.gz\nstudy.tar.gz\nsummary.md')" ]] || e2e_fail "OUT holds $(ls "$WORK/out" | tr '\n' ' ')"
[[ "$(tail -n 1 "$WORK/stdout")" == "$(tail -n 1 "$S")" ]] || e2e_fail "the summary is not printed last"
for step in preflight env ptx parity sanitize e2e bench serve study; do
  grep -qE "^\| $step \| ok \|" "$S" || e2e_fail "step $step did not pass"
done
grep -qE '^\| ptx \| ok \| [0-9]+ \| All tests passed .*\(tags \[ptx\]\)' "$S" || e2e_fail "the ptx step ran no instruction test"
grep -qE '^\| nccl \| not here \| [0-9]+ \| not built: the emulator has no NCCL' "$S" || e2e_fail "the nccl step did not say why it did not run"
grep -qE '^\| parity \| ok .*never launched: [0-9]+ of [0-9]+ moe kernels' "$S" || e2e_fail "no never-launched count"
for model in transformer moe-ffn moa mae-7 lstm-moe-lm; do
  grep -qE "$model: f32 losses within [0-9.e+-]+ over 2 updates; 3 updates" "$S" || e2e_fail "$model: not trained and compared"
done
[[ "$(grep -o 'beam 5: BLEU [0-9.]* on 2 test lines' "$S" | wc -l)" == 4 ]] || e2e_fail "not every translation model was decoded and scored"
grep -q 'lstm-moe-lm: .*valid perplexity [0-9.]*' "$S" || e2e_fail "the LM was not scored"
grep -q 'moe-bench: ceilings ' "$S" || e2e_fail "no moe-bench figures"
grep -qE '\| serve \| ok \| [0-9]+ \| .*2 clients: [0-9.]+ against [0-9.]+ req/s one at a time' "$S" || e2e_fail "no serving figures"
# The study step: the baseline trained by time (its cell serves both arms), the MoE for that time and for the
# baseline's updates, each decoded and scored; the cells come back without checkpoints.
grep -qE '^\| study \| ok \| [0-9]+ \| gpu-transformer updates s1: [0-9]+ updates, [0-9.]+ s, BLEU [0-9.]+, chrF [0-9.]+; gpu-moe time s1: .*; gpu-moe updates s1: .*; 3 cells run, 0 carried in, 0 not started' "$S" ||
  e2e_fail "the study step did not run its three cells"
tar -tzf "$WORK/out/study.tar.gz" > "$WORK/study.txt"
[[ "$(grep -c '/result.tsv$' "$WORK/study.txt")" == 3 ]] || e2e_fail "study.tar.gz does not hold the three cells"
grep -q 'cells/gpu-moe-updates-s1/experts.jsonl' "$WORK/study.txt" || e2e_fail "the MoE's experts were not scored"
grep -q 'safetensors' "$WORK/study.txt" && e2e_fail "study.tar.gz holds checkpoints"
"$ROOT/scripts/gpu-check.sh" --emulate "$WORK/again" --bin "$BIN" --data "$DATA" --budget 120 --steps study "${STUDY[@]}" \
  --study-from "$WORK/out/study.tar.gz" > /dev/null 2>&1 || e2e_fail "the study step with its cells carried in failed"
grep -qE '^\| study \| ok \| [0-9]+ \| 0 cells run, 3 carried in' "$WORK/again/summary.md" ||
  { cat "$WORK/again/summary.md"; e2e_fail "the study step ran carried cells again"; }
[[ "$(tar -tzf "$WORK/again/study.tar.gz" | grep -c '/result.tsv$')" == 3 ]] || e2e_fail "the carried cells did not come back"
tar -tzf "$WORK/out/logs.tar.gz" > "$WORK/logs.txt"
grep -q 'logs/e2e/mae-7-cuda.metrics.jsonl' "$WORK/logs.txt" || e2e_fail "logs.tar.gz lacks the e2e metrics"

"$ROOT/scripts/gpu-check.sh" --emulate "$WORK/short" --bin "$BIN" --data "$DATA" --budget 5 --steps parity,bench > /dev/null 2>&1 ||
  e2e_fail "a run whose steps are all skipped failed"
for step in parity bench; do
  grep -qE "^\| $step \| skipped \| 0 \| would overrun: needs at least [0-9]+ s" "$WORK/short/summary.md" ||
    e2e_fail "$step was not skipped for the budget"
done
# A sanitizer tag that matches no test case fails the step instead of passing unchecked; the others still run.
"$ROOT/scripts/gpu-check.sh" --emulate "$WORK/tags" --bin "$BIN" --data "$DATA" --budget 300 --steps sanitize \
  --tags '[no_such_tag];[ema]' > /dev/null 2>&1 && e2e_fail "a tag without test cases passed"
grep -qE '^\| sanitize \| FAILED \| [0-9]+ \| emulator: \[no_such_tag\] FAILED \(no test case has this tag\), \[ema\] ok' \
  "$WORK/tags/summary.md" || { cat "$WORK/tags/summary.md"; e2e_fail "the tag without test cases was not reported"; }
echo "$E2E_NAME: OK"
