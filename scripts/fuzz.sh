#!/usr/bin/env bash
# Fuzzes the parsers of user input (tests/fuzz) with libFuzzer, AddressSanitizer, LeakSanitizer and
# UndefinedBehaviorSanitizer. Builds the fuzz build (clang, cmake -DMOE_FUZZ=ON) and runs each harness
# for N seconds from its seeds (tests/fuzz/seeds/NAME) and dictionary (tests/fuzz/dicts/NAME.dict); the
# corpus grows in BUILD/corpus/NAME across runs. A crash, leak, sanitizer report, timeout or broken
# invariant fails, keeping the input in BUILD/crashes/NAME/ (copy it into the seeds as a regression).
#   scripts/fuzz.sh [--seconds N] [--build-dir DIR] [--jobs N] [--log FILE] [NAME ...]
#   scripts/fuzz.sh --totals FILE        per harness: seconds, runs and failed runs summed over a log
# --seconds: per harness (default 60); --jobs: build jobs, and harnesses fuzzing at once (default: the cores);
# --log FILE: appends "date, harness, seconds, runs, result" lines (tab-separated; docs/fuzz-runs.tsv keeps the
# project's totals, docs/FUZZING.md explains them).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SECONDS_EACH=60 BUILD="$ROOT/build-fuzz" JOBS="$(nproc)" LOG="" NAMES=()
while (( $# )); do
  case "$1" in
    --seconds) SECONDS_EACH="$2"; shift 2 ;;
    --build-dir) BUILD="$2"; shift 2 ;;
    --jobs) JOBS="$2"; shift 2 ;;
    --log) LOG="$2"; shift 2 ;;
    --totals)
      printf '%-16s %9s %12s %7s\n' harness seconds runs failed
      awk -F'\t' 'NR > 1 { s[$2] += $3; r[$2] += $4; f[$2] += ($5 != "ok") }
        END { for (h in s) printf "%-16s %9d %12d %7d\n", h, s[h], r[h], f[h] }' "${2:?--totals needs a log file}" | sort
      exit 0 ;;
    -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
    *) NAMES+=("$1"); shift ;;
  esac
done
command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ not found (scripts/install-deps.sh --with fuzz)" >&2; exit 2; }
if (( ${#NAMES[@]} == 0 )); then
  for f in "$ROOT"/tests/fuzz/*.cpp; do n="$(basename "$f" .cpp)"; [[ $n == replay_main ]] || NAMES+=("$n"); done
fi
for n in "${NAMES[@]}"; do
  [[ -f "$ROOT/tests/fuzz/$n.cpp" ]] || { echo "fuzz.sh: no harness tests/fuzz/$n.cpp" >&2; exit 2; }
done

mkdir -p "$BUILD"
CC=clang CXX=clang++ cmake -S "$ROOT" -B "$BUILD" -DMOE_FUZZ=ON -DMOE_TESTS=OFF -DMOE_CUDA=OFF \
  -DCMAKE_BUILD_TYPE=Debug >"$BUILD/configure.log" 2>&1 || { cat "$BUILD/configure.log" >&2; exit 1; }
cmake --build "$BUILD" -j "$JOBS" --target "${NAMES[@]/#/fuzz_}"

export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1" UBSAN_OPTIONS="print_stacktrace=1"
run_harness() {  # NAME: fuzzes it for SECONDS_EACH; its log in BUILD/NAME.log, "ok" or "FAILED" in BUILD/NAME.result
  local n="$1" out="$BUILD/$1.log"
  mkdir -p "$BUILD/corpus/$n" "$BUILD/crashes/$n" "$BUILD/tmp/$n"
  local args=(-max_total_time="$SECONDS_EACH" -timeout=20 -rss_limit_mb=4096 -print_final_stats=1
              -artifact_prefix="$BUILD/crashes/$n/")
  [[ -f "$ROOT/tests/fuzz/dicts/$n.dict" ]] && args+=(-dict="$ROOT/tests/fuzz/dicts/$n.dict")
  if TMPDIR="$BUILD/tmp/$n" "$BUILD/bin/fuzz_$n" "${args[@]}" "$BUILD/corpus/$n" "$ROOT/tests/fuzz/seeds/$n" \
      >"$out" 2>&1; then
    echo ok >"$BUILD/$n.result"
  else
    echo FAILED >"$BUILD/$n.result"
  fi
  rm -rf "$BUILD/tmp/$n"
}
# JOBS harnesses at a time (each libFuzzer process uses one core), reported in order once all have run.
for n in "${NAMES[@]}"; do
  while (( $(jobs -rp | wc -l) >= JOBS )); do wait -n || true; done
  run_harness "$n" &
done
wait
failed=()
for n in "${NAMES[@]}"; do
  out="$BUILD/$n.log" result="$(cat "$BUILD/$n.result" 2>/dev/null || echo FAILED)"
  if [[ $result != ok ]]; then
    failed+=("$n")
    grep -E "ERROR|runtime error|invariant|SUMMARY|Test unit written" "$out" | head -20 >&2 || true
  fi
  runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$out" | tail -1)"
  printf 'fuzz.sh: %-16s %4s s  %9s runs  %s (log %s)\n' "$n" "$SECONDS_EACH" "${runs:-?}" "$result" "$out"
  [[ -n "$LOG" ]] && printf '%s\t%s\t%s\t%s\t%s\n' "$(date -u +%F)" "$n" "$SECONDS_EACH" "${runs:-0}" "$result" >>"$LOG"
done
if (( ${#failed[@]} )); then echo "fuzz.sh: FAILED: ${failed[*]} (inputs in $BUILD/crashes/)" >&2; exit 1; fi
echo "fuzz.sh: every harness ran ${SECONDS_EACH} s without a finding"
