#!/usr/bin/env bash
# scripts/demo.sh as a newcomer runs it, on a tiny budget: a CPU run of 0.25 minutes that translates
# the first 30 test lines. Checks that it states its time budget, prints a BLEU line, five examples
# (source / translation / reference, the translation non-empty) and the time taken, that the
# translation keeps the test lines 1:1, and that bad options are refused with a message.
# Usage (ctest passes both): demo_smoke.sh BIN_DIR SHARED_DATA_DIR. Exit 77 = skipped (no data).
set -euo pipefail
BIN="${1:?usage: demo_smoke.sh BIN_DIR SHARED_DATA_DIR}"
SHARED="${2:?usage: demo_smoke.sh BIN_DIR SHARED_DATA_DIR}"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
if [[ ! -f "$SHARED/multi30k/train.en" ]]; then echo "demo_smoke: no Multi30k data in $SHARED: skipped"; exit 77; fi
WORK="$(mktemp -d "${TMPDIR:-/tmp}/moe-demo.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
fail() { echo "demo_smoke: FAIL: $*" >&2; echo "--- demo output:" >&2; cat "$WORK/out.txt" >&2 || true; exit 1; }

MOE_BIN="$BIN" MOE_DATA="$SHARED" bash "$ROOT/scripts/demo.sh" --cpu-minutes 0.25 --test-lines 30 --out "$WORK/demo" \
  > "$WORK/out.txt" 2>&1 || fail "scripts/demo.sh exited with an error"
grep -q "time budget 0.25 minutes" "$WORK/out.txt" || fail "the time budget is not stated"
grep -Eq '^BLEU = [0-9]+\.[0-9]+ ' "$WORK/out.txt" || fail "no BLEU line"
[[ $(wc -l < "$WORK/demo/test.hyp") -eq 30 ]] || fail "test.hyp does not have the 30 lines of the test subset"
grep -q "five test sentences" "$WORK/out.txt" || fail "no examples"
[[ $(grep -c '^  > ' "$WORK/out.txt") -eq 5 && $(grep -c '^  = ' "$WORK/out.txt") -eq 5 ]] || fail "not five examples"
grep -Eq '^  > .+' "$WORK/out.txt" || fail "empty translations in the examples"
grep -Eq '^demo: [0-9]+ s in all' "$WORK/out.txt" || fail "no total time"

for bad in "--cpu-minutes soon" "--test-lines -3" "--frobnicate"; do
  # shellcheck disable=SC2086
  if MOE_BIN="$BIN" bash "$ROOT/scripts/demo.sh" $bad > "$WORK/bad.txt" 2>&1; then fail "demo.sh accepted $bad"; fi
  grep -q "demo.sh:" "$WORK/bad.txt" || fail "no message for $bad"
done
echo "demo_smoke: ok"
