#!/usr/bin/env bash
# The end-to-end benchmarks of docs/PERF.md in one command (issue bars: Multi30k BLEU in 3 minutes of
# training, beam-5 decoding tokens/s, the four Multi30k MoE variants on one budget, the WikiText-103
# sample LM perplexity in 19 s):
#   scripts/bench-e2e.sh OUT_DIR [--only base,mae-7,moa,moe,lm] [--minutes 3] [--lm-seconds 19]
#       [--device auto] [--bin DIR | --build-dir DIR [--debs DIR]] [--data DIR]
#       [--mt-arg ARG]... [--lm-arg ARG]... [--decode-arg ARG]...
# Per run NAME, OUT_DIR/NAME/ holds train.log, run/ (checkpoints, metrics.jsonl), and for translation
# test.hyp, translate.log and bleu.json (test_2016_flickr, beam 5, the best checkpoint), for the LM
# ppl.json (moe-score ppl --context 256 --stride 224 on wiki.valid.tokens). Each finished run appends
# a row to OUT_DIR/results.jsonl; OUT_DIR/results.md is the table for docs/PERF.md.
# Without --bin, builds moe-train/-translate/-score/-vocab in --build-dir (default build-bench,
# Release, MOE_CUDA_ARCHITECTURES=90). --mt-arg / --lm-arg add moe-train options to the translation /
# LM runs, --decode-arg moe-translate options (default on a GPU: --dtype bf16 --max-tokens 16384).
# --data: the folder with multi30k/ and wikitext-103-sample/ (default $MOE_DATA, else data/shared when
# present, a copy a device machine can carry, else ../shared/data). One run of 3 minutes takes about
# 4 with data, start-up and decoding: split --only across time-limited calls. Exit code: non-zero if
# any step failed.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
usage() { sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; }
OUT=""; ONLY="base,mae-7,moa,moe,lm"; MINUTES=3; LM_SECONDS=19; DEVICE=auto; BIN=""; BUILD="$ROOT/build-bench"
DEBS=""; DATA="${MOE_DATA:-$ROOT/../shared/data}"; [[ -z "${MOE_DATA:-}" && -d "$ROOT/data/shared" ]] && DATA="$ROOT/data/shared"
MT_ARGS=(); LM_ARGS=(); DECODE_ARGS=()
while (( $# )); do
  case "$1" in
    --only) ONLY="$2"; shift 2 ;;
    --minutes) MINUTES="$2"; shift 2 ;;
    --lm-seconds) LM_SECONDS="$2"; shift 2 ;;
    --device) DEVICE="$2"; shift 2 ;;
    --bin) BIN="$2"; shift 2 ;;
    --build-dir) BUILD="$2"; shift 2 ;;
    --debs) DEBS="$2"; shift 2 ;;
    --data) DATA="$2"; shift 2 ;;
    --mt-arg) MT_ARGS+=("$2"); shift 2 ;;
    --lm-arg) LM_ARGS+=("$2"); shift 2 ;;
    --decode-arg) DECODE_ARGS+=("$2"); shift 2 ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "bench-e2e: unknown option $1 (try --help)" >&2; exit 2 ;;
    *) [[ -z "$OUT" ]] || { echo "bench-e2e: one output folder only (got $OUT and $1)" >&2; exit 2; }; OUT="$1"; shift ;;
  esac
done
[[ -n "$OUT" ]] || { usage >&2; exit 2; }
mkdir -p "$OUT" && OUT="$(cd "$OUT" && pwd)"
step() { echo "== bench-e2e: $* ($(date -u +%H:%M:%S))"; }

if [[ -z "$BIN" ]]; then
  source "$ROOT/scripts/internal/gpu-build.sh"
  step "build in $BUILD (log: $OUT/build.log)"
  gpu_build "$BUILD" "$DEBS" "$OUT/build.log" moe-train moe-translate moe-score moe-vocab moe-bench || exit 1
  BIN="$BUILD/bin"
fi
for p in moe-train moe-translate moe-score moe-vocab; do
  [[ -x "$BIN/$p" ]] || { echo "bench-e2e: $BIN/$p is missing" >&2; exit 1; }
done
if [[ "$DEVICE" == auto ]]; then
  if "$BIN/moe-bench" --has-gpu >/dev/null 2>&1 || nvidia-smi -L >/dev/null 2>&1; then DEVICE=cuda; else DEVICE=cpu; fi
fi
if [[ "$DEVICE" == cuda* && ${#DECODE_ARGS[@]} -eq 0 ]]; then DECODE_ARGS=(--dtype bf16 --max-tokens 16384); fi
{
  echo "moe $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown), $(date -u +%Y-%m-%dT%H:%MZ), device $DEVICE"
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader 2>/dev/null || true
} > "$OUT/device.txt"
cat "$OUT/device.txt"
status=0
SUMMARY=(python3 "$ROOT/scripts/bench_e2e_summary.py")

M30K="$OUT/data/multi30k"
mt_run() {  # NAME RECIPE
  local name="$1" recipe="$ROOT/recipes/$2" dir="$OUT/$1"
  mkdir -p "$dir"
  if [[ ! -f "$M30K/vocab.spm" ]]; then
    step "Multi30k data in $M30K"
    local from=(); [[ -f "$DATA/multi30k/train.en" || -f "$DATA/multi30k/train.en.gz" ]] && from=(--from "$DATA/multi30k")
    "$ROOT/data-prep/multi30k.sh" --out "$M30K" --moe-vocab "$BIN/moe-vocab" "${from[@]}" > "$OUT/data.log" 2>&1 ||
      { tail -20 "$OUT/data.log"; echo "bench-e2e: Multi30k preparation failed" >&2; return 1; }
  fi
  step "$name: moe-train $2 for $MINUTES min on $DEVICE"
  rm -rf "$dir/run"
  local t0=$SECONDS
  "$BIN/moe-train" --config "$recipe" --run_dir "$dir/run" --train.device "$DEVICE" --train.max_minutes "$MINUTES" \
    --data.train.src "$M30K/train.src" --data.train.tgt "$M30K/train.tgt" \
    --data.valid.src "$M30K/valid.src" --data.valid.tgt "$M30K/valid.tgt" \
    --data.vocab.src "$M30K/vocab.spm" --data.vocab.tgt "$M30K/vocab.spm" "${MT_ARGS[@]}" > "$dir/train.log" 2>&1 ||
    { tail -20 "$dir/train.log"; echo "bench-e2e: $name: moe-train failed" >&2; return 1; }
  local wall=$((SECONDS - t0)) ck="$dir/run/checkpoint.best.safetensors"
  [[ -f "$ck" ]] || ck="$dir/run/checkpoint.last.safetensors"
  step "$name: moe-translate test_2016_flickr, beam 5 ($(basename "$ck"))"
  "$BIN/moe-translate" -m "$ck" --beam 5 --device "$DEVICE" "${DECODE_ARGS[@]}" -i "$M30K/test.src" -o "$dir/test.hyp" \
    2> "$dir/translate.log" || { cat "$dir/translate.log"; echo "bench-e2e: $name: moe-translate failed" >&2; return 1; }
  tail -1 "$dir/translate.log"
  "$BIN/moe-score" bleu -r "$M30K/test.tgt" -i "$dir/test.hyp" --format json > "$dir/bleu.json" ||
    { echo "bench-e2e: $name: moe-score bleu failed" >&2; return 1; }
  "${SUMMARY[@]}" row --name "$name" --recipe "recipes/$2" --device "$DEVICE" --wall "$wall" --run "$dir/run" \
    --checkpoint "$ck" --bleu "$dir/bleu.json" --translate-log "$dir/translate.log" >> "$OUT/results.jsonl"
}

lm_run() {
  local dir="$OUT/lm" text="$DATA/wikitext-103-sample"
  mkdir -p "$dir"
  [[ -f "$text/wiki.train.tokens" ]] || { echo "bench-e2e: lm: no WikiText-103 sample in $text" >&2; return 1; }
  step "lm: moe-train wikitext103-sample-lm.yml for $LM_SECONDS s on $DEVICE"
  rm -rf "$dir/run"
  local t0=$SECONDS
  "$BIN/moe-train" --config "$ROOT/recipes/wikitext103-sample-lm.yml" --run_dir "$dir/run" --train.device "$DEVICE" \
    --train.max_minutes "$(python3 -c "print($LM_SECONDS / 60)")" \
    --data.train.text "$text/wiki.train.tokens" --data.valid.text "$text/wiki.valid.tokens" \
    --data.vocab.path "$dir/vocab.words" --data.cache_dir "$dir" "${LM_ARGS[@]}" > "$dir/train.log" 2>&1 ||
    { tail -20 "$dir/train.log"; echo "bench-e2e: lm: moe-train failed" >&2; return 1; }
  local wall=$((SECONDS - t0)) ck="$dir/run/checkpoint.best.safetensors"
  [[ -f "$ck" ]] || ck="$dir/run/checkpoint.last.safetensors"
  step "lm: moe-score ppl --context 256 --stride 224 ($(basename "$ck"))"
  "$BIN/moe-score" ppl -m "$ck" -i "$text/wiki.valid.tokens" --device "$DEVICE" --context 256 --stride 224 \
    --format json > "$dir/ppl.json" || { echo "bench-e2e: lm: moe-score ppl failed" >&2; return 1; }
  cat "$dir/ppl.json"
  "${SUMMARY[@]}" row --name lm --recipe recipes/wikitext103-sample-lm.yml --device "$DEVICE" --wall "$wall" \
    --run "$dir/run" --checkpoint "$ck" --ppl "$dir/ppl.json" >> "$OUT/results.jsonl"
}

IFS=, read -ra RUNS <<< "$ONLY"
for r in "${RUNS[@]}"; do
  case "$r" in
    base) mt_run base multi30k-en-de.yml || status=1 ;;
    mae-7|moa|moe) mt_run "$r" "multi30k-en-de-$r.yml" || status=1 ;;
    lm) lm_run || status=1 ;;
    *) echo "bench-e2e: unknown run '$r' (base, mae-7, moa, moe, lm)" >&2; status=2 ;;
  esac
done
[[ -f "$OUT/results.jsonl" ]] && "${SUMMARY[@]}" table "$OUT/results.jsonl" | tee "$OUT/results.md"
step "done (exit $status); results in $OUT"
exit $status
