#!/usr/bin/env bash
# scripts/study.sh on a smoke budget: the translation baseline and its MoE FFN, the LSTM and the LSTM-MoE,
# one seed, 6 updates (both arms), 20 test lines. Checks that every cell wrote its result, that the time
# arm gave the mixture model the updates its measured time allows, that docs/RESULTS.md-style output has
# both arms' tables with numbers, the expert table and the figures (curves and heatmaps), that a second
# run retrains nothing (resumable), that --report-only rewrites the report from the cells with a hand-written
# section of readings.md appended, and that bad options are refused with a message. Every study recipe
# (recipes/study/*.yml, the GPU grid's full-size ones too) must also pass moe-train --dry-run. The GPU grid's
# own path (time budgets, --device cuda) runs in tests/scripts/gpu_check_rehearsal.sh, on the emulator.
# Usage (ctest passes both): study_smoke.sh BIN_DIR SHARED_DATA_DIR. Exit 77 = skipped (no data).
set -euo pipefail
BIN="${1:?usage: study_smoke.sh BIN_DIR SHARED_DATA_DIR}"
SHARED="${2:?usage: study_smoke.sh BIN_DIR SHARED_DATA_DIR}"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
for f in multi30k/train.en 1b-word-sample/news.en.heldout-00000-of-00050; do
  [[ -f "$SHARED/$f" ]] || { echo "study_smoke: no $SHARED/$f: skipped"; exit 77; }
done
WORK="$(mktemp -d "${TMPDIR:-/tmp}/moe-study.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
fail() { echo "study_smoke: FAIL: $*" >&2; tail -20 "$WORK/out.txt" >&2 || true; exit 1; }

for r in "$ROOT"/recipes/study/*.yml; do
  "$BIN/moe-train" --config "$r" --dry-run --dry-run-vocab 8000 \
    > "$WORK/dry.txt" 2>&1 || { cat "$WORK/dry.txt" >&2; fail "moe-train --dry-run refuses $r"; }
done

# No warm-up: a time-arm budget can be a single update (6 x the baseline's time over a model 4x slower, as
# the LSTM-MoE was on CI), and the linear decay needs more updates than warm-up ones.
study() {
  bash "$ROOT/scripts/study.sh" --bin "$BIN" --data "$SHARED" --out "$WORK/study" --results "$WORK/RESULTS.md" \
    --tasks mt,lstm --models mt-transformer,mt-moe,lstm,lstm-moe --seeds 1 --updates-mt 6 --updates-lstm 6 \
    --test-lines 20 --train-args "--train.warmup_updates 0 --train.log_every 1" "$@"
}
study > "$WORK/out.txt" 2>&1 || fail "scripts/study.sh exited with an error"
CELLS="$WORK/study/cells"
for c in mt-transformer-updates-s1 mt-moe-updates-s1 mt-moe-time-s1 lstm-updates-s1 lstm-moe-updates-s1 lstm-moe-time-s1; do
  [[ -f "$CELLS/$c/result.tsv" ]] || fail "no result for cell $c"
done
[[ ! -d "$CELLS/mt-transformer-time-s1" ]] || fail "the baseline ran a time-arm cell of its own"
# The time arm's updates: 6 x (baseline seconds / MoE seconds), rounded.
tb=$(sed -n 's/^train_seconds\t//p' "$CELLS/mt-transformer-updates-s1/result.tsv")
tm=$(sed -n 's/^train_seconds\t//p' "$CELLS/mt-moe-updates-s1/result.tsv")
want=$(awk -v a="$tb" -v b="$tm" 'BEGIN { v = int(6 * a / b + 0.5); print (v > 1 ? v : 1) }')
got=$(sed -n 's/^updates\t//p' "$CELLS/mt-moe-time-s1/result.tsv")
[[ "$got" == "$want" ]] || fail "the time arm trained mt-moe $got updates, not 6 x $tb / $tm = $want"
[[ $(wc -l < "$CELLS/mt-moe-updates-s1/test.hyp") -eq 20 ]] || fail "the test translation is not 20 lines"

R="$WORK/RESULTS.md"
grep -q "Smoke run: only the first 20 test lines" "$R" || fail "RESULTS.md does not say the test set was cut"
for h in "### equal updates" "### equal training time" "### experts (seed 1, equal updates)"; do
  [[ $(grep -c "^$h" "$R") -eq 2 ]] || fail "RESULTS.md lacks '$h' for both tasks"
done
# mt rows: model | updates | ppl | BLEU | chrF | tokens/s | seconds | parameters, each a number (n 1)
grep -Eq '^\| mt-moe \| 6 \| [0-9.]+ \(n 1\) \| [0-9.]+ \(n 1\) \| [0-9.]+ \(n 1\) \| [0-9.]+ \(n 1\) \| [0-9.]+ \(n 1\) \| [0-9.]+M total, .*active per token \|$' "$R" ||
  fail "no complete mt-moe row"
grep -Eq '^\| lstm-moe \| 1 \| 0\.[0-9]{3} \| 0\.693 \| ' "$R" || fail "no expert row for lstm-moe (1 site, top-2: maximum ln 2)"
for f in curves-mt.svg curves-lstm.svg experts-mt-moe.svg experts-lstm-moe.svg; do
  grep -q "<svg" "$WORK/results/$f" 2>/dev/null || fail "figure $f missing"
  grep -q "results/$f" "$R" || fail "RESULTS.md does not show $f"
done

before=$(stat -c %Y "$CELLS"/*/result.tsv | sort | md5sum)
study > "$WORK/out.txt" 2>&1 || fail "the second run exited with an error"
grep -q "updates arm, seed" "$WORK/out.txt" && fail "the second run trained a cell again"
[[ "$(stat -c %Y "$CELLS"/*/result.tsv | sort | md5sum)" == "$before" ]] || fail "the second run rewrote results"

printf '## On a GPU\n\nNot run yet.\n' > "$WORK/results/readings.md"
study --report-only > "$WORK/out.txt" 2>&1 || fail "--report-only exited with an error"
grep -q "arm, seed" "$WORK/out.txt" && fail "--report-only trained a cell"
[[ "$(stat -c %Y "$CELLS"/*/result.tsv | sort | md5sum)" == "$before" ]] || fail "--report-only rewrote results"
grep -q '^| mt-moe | 6 |' "$R" && [[ "$(tail -n 3 "$R")" == "$(printf '## On a GPU\n\nNot run yet.')" ]] ||
  fail "--report-only did not write the tables and the readings' own section"

for bad in "--tasks mt,speech" "--seeds one" "--arms updates,flops" "--frobnicate"; do
  # shellcheck disable=SC2086
  if bash "$ROOT/scripts/study.sh" --bin "$BIN" --out "$WORK/bad" $bad > "$WORK/bad.txt" 2>&1; then fail "study.sh accepted $bad"; fi
  grep -q "study.sh:" "$WORK/bad.txt" || fail "no message for $bad"
done
echo "study_smoke: ok ($(grep -c . "$R") lines of results, 6 cells)"
