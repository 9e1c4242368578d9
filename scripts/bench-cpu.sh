#!/usr/bin/env bash
# moe against PyTorch and CTranslate2 on the CPU, side by side in one run (issues 13, 27; results in docs/PERF.md):
#   scripts/bench-cpu.sh [--out DIR] [--bin DIR] [--threads "1 2"] [--updates 30] [--only train,decode]
#       [--models demo,big] [--checkpoint CKPT] [--train-minutes 5] [--repeat 3] [--decode-arg ARG]...
#       [--ct2 CT2_BUILD_DIR] [--sides "moe-f32 moe-int8 ct2-f32 ct2-int8 torch"] [--lines N] [--plain-malloc]
#       [--beams "5 1"] [--pause S]
# Cores: every run at N threads is pinned to N cores (taskset -c 0..N-1) and told N everywhere: moe
# --cpu-threads N and OMP_NUM_THREADS=N; PyTorch torch.set_num_threads(N), OMP_NUM_THREADS, OPENBLAS_NUM_THREADS
# and MKL_NUM_THREADS = N (Debian's PyTorch calls OpenBLAS, whose threads set_num_threads does not limit);
# CTranslate2 --intra_threads N --inter_threads 1 and OMP_NUM_THREADS=N. Every side runs with glibc's malloc
# told to keep freed memory (MALLOC_MMAP_THRESHOLD_ 32 MiB, MALLOC_TRIM_THRESHOLD_ 64 GiB, MALLOC_TOP_PAD_ 1 GiB:
# the effect of the jemalloc/tcmalloc preload that PyTorch's CPU tuning guides advise): without it PyTorch and
# CTranslate2 return their large blocks to the system after each use and fault them in again (PyTorch training
# ran 2.8x slower so on this VM, 18% of its time in page faults); --plain-malloc leaves glibc's defaults.
# What ran (issue 39): a "machine" line first records the CPU, moe's kernel set, GEMM backend and OpenBLAS kernels
# (moe-bench --cpu-info) and the OpenBLAS kernels PyTorch runs; where Debian's OpenBLAS does not know the CPU and
# falls back to SSE3 kernels, moe sets OPENBLAS_CORETYPE for itself and PyTorch gets the same value (a crippled
# peer is no comparison). Every line names the CPU and its side's GEMM library and kernels ("blas").
# Each JSON line records the cores the process used ((user + system) / wall, /usr/bin/time), its peak
# resident memory and the 1-minute load average before it ran; the summary prints median, min-max over
# --repeat runs and cores used beside each figure.
# Training: target tokens/s of moe-train and of scripts/bench_cpu_torch.py (the same model written in
# PyTorch) on Multi30k (data-prep/multi30k.sh from ../shared/data, SentencePiece 8k, 4000-token
# batches, f32, dropout 0.1), --updates timed updates after 5 untimed, the same batches in the same order on both
# sides (scripts/moe_batches.py; each side's tokens are printed), for the demo model (d 256,
# FFN 1024, 4 heads, 3+3, pre-norm, tied) and "big" (d 512, FFN 2048, 8 heads, 6+6), at each thread
# count. Decoding: beam 5 and greedy (--beams) of test_2016_flickr (1000 lines) with one demo checkpoint
# (--checkpoint, else the demo model trained here for --train-minutes): moe-translate f32 and --quantize
# int8, the same weights in PyTorch with a key/value cache, and, with --ct2 (a CTranslate2 build,
# ../shared/peers/ct2/README.md), CTranslate2 float32 and int8 of the converted checkpoint; wall seconds,
# BLEU of each output, model sizes on disk.
# --pause S sleeps S seconds before every timed decoding run: on a VM whose host takes back freed memory
# (virtio-balloon free page reporting) a program that runs right after another reuses the pages it freed, and one
# that runs after a pause faults in fresh ones, slowly; with a pause every run starts alike, as a one-off run
# does (docs/PERF.md, "Huge pages").
# Prints one JSON line per measurement (also appended to DIR/results.jsonl) and a summary table
# (speed relative to moe f32 / PyTorch: > 1 means moe is faster). PyTorch is /usr/bin/python3's (python3-torch).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT="$ROOT/runs/bench-cpu"; BIN="$ROOT/build-cpu/bin"; THREADS="1 2"; UPDATES=30; WARMUP=5; ONLY="train,decode"
MODELS="demo,big"; CKPT=""; TRAIN_MINUTES=5; REPEAT=3; PY=/usr/bin/python3; DECODE_ARGS=(); CT2_BUILD=""; SIDES=""; LINES=0
PEERS="$ROOT/../shared/peers/ct2"
PLAIN_MALLOC=0; BEAMS="5 1"; PAUSE=0
while (( $# )); do
  case "$1" in
    --out) OUT="$2"; shift 2 ;;
    --bin) BIN="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --updates) UPDATES="$2"; shift 2 ;;
    --only) ONLY="$2"; shift 2 ;;
    --models) MODELS="$2"; shift 2 ;;
    --checkpoint) CKPT="$2"; shift 2 ;;
    --train-minutes) TRAIN_MINUTES="$2"; shift 2 ;;
    --repeat) REPEAT="$2"; shift 2 ;;
    --decode-arg) DECODE_ARGS+=("$2"); shift 2 ;;
    --ct2) CT2_BUILD="$(cd "$2" && pwd)"; shift 2 ;;
    --sides) SIDES="$2"; shift 2 ;;
    --lines) LINES="$2"; shift 2 ;;
    --plain-malloc) PLAIN_MALLOC=1; shift ;;
    --beams) BEAMS="$2"; shift 2 ;;
    --pause) PAUSE="$2"; shift 2 ;;
    -h|--help) sed -n '2,37p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench-cpu: unknown option $1 (try --help)" >&2; exit 2 ;;
  esac
done
# Every side's malloc setting (above): exported once, so every program this script runs inherits it.
((PLAIN_MALLOC)) || export MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=68719476736 MALLOC_TOP_PAD_=1073741824
for b in moe-train moe-translate moe-vocab moe-average moe-score; do
  [[ -x "$BIN/$b" ]] || { echo "bench-cpu: $BIN/$b missing (build it, or give --bin)" >&2; exit 2; }
done
"$PY" -c "import torch" 2>/dev/null || { echo "bench-cpu: $PY has no torch (scripts/install-deps.sh --with bench)" >&2; exit 2; }
if [[ -n "$CT2_BUILD" ]]; then
  [[ -x "$CT2_BUILD/cli/ct2-translator" ]] || { echo "bench-cpu: no $CT2_BUILD/cli/ct2-translator (see $PEERS/README.md)" >&2; exit 2; }
  "$PY" -c "import numpy, sentencepiece" 2>/dev/null || { echo "bench-cpu: --ct2 needs python3-numpy and python3-sentencepiece" >&2; exit 2; }
fi
mkdir -p "$OUT"
RESULTS="$OUT/results.jsonl"
DATA="$OUT/data"
if [[ ! -f "$DATA/vocab.spm" ]]; then
  FROM=(); [[ -f "$ROOT/../shared/data/multi30k/train.en" ]] && FROM=(--from "$ROOT/../shared/data/multi30k")
  "$ROOT/data-prep/multi30k.sh" --out "$DATA" --moe-vocab "$BIN/moe-vocab" "${FROM[@]}" >/dev/null
fi
for f in train.src train.tgt test.src; do
  [[ -s "$DATA/$f.ids" ]] || "$BIN/moe-vocab" encode --vocab "$DATA/vocab.spm" -i "$DATA/$f" -o "$DATA/$f.ids"
done
emit() { echo "$1" | tee -a "$RESULTS"; }
# timed FILE CMD...: wall user sys faults max-RSS of CMD, after the load average (first field)
timed() { local f="$1"; shift; cut -d' ' -f1 /proc/loadavg > "$f.load"; /usr/bin/time -f '%e %U %S %F %R %M' -o "$f" "$@"; }
cpu_fields() {  # FILE BLAS: the JSON fields of a timed run of a side whose GEMMs run on BLAS
  local wall user sys major minor rss; read -r wall user sys major minor rss < <(tail -1 "$1")
  echo "\"cpu\": \"$CPU_MODEL\", \"blas\": \"$2\", \"wall\": $wall, \"user\": $user, \"system\": $sys, \"cores_used\": $(awk -v w="$wall" -v u="$user" -v s="$sys" \
    'BEGIN { printf "%.2f", (u + s) / (w > 0 ? w : 1) }'), \"max_rss_mib\": $((rss / 1024)), \"page_faults\": $((major + minor)), \"load1\": $(cat "$1.load")"
}
pin() { PIN=(taskset -c "0-$(($1 - 1))"); }  # N: the first N CPUs
# Builds from before --cpu-threads (a baseline) get the thread count through OpenBLAS instead.
threads_flag() {
  if [[ "$1" == 0 ]]; then THREAD_ARGS=(); ENV_T=(env); return; fi  # 0: every core, the programs' default
  pin "$1"
  if "$BIN/moe-train" --cpu-threads 1 --help >/dev/null 2>&1; then THREAD_ARGS=(--cpu-threads "$1"); ENV_T=(env "OMP_NUM_THREADS=$1" "${PIN[@]}")
  else THREAD_ARGS=(); ENV_T=(env "OPENBLAS_NUM_THREADS=$1" "OMP_NUM_THREADS=$1" "${PIN[@]}"); fi
}
torch_env() {
  pin "$1"
  TORCH_ENV=(env "OMP_NUM_THREADS=$1" "OPENBLAS_NUM_THREADS=$1" "MKL_NUM_THREADS=$1" ${BLAS_CORE:+"OPENBLAS_CORETYPE=$BLAS_CORE"} "${PIN[@]}")
}
MOE_CPU="$("$BIN/moe-bench" --cpu-info 2>/dev/null || echo '{}')"  # older builds: no --cpu-info
json_field() { "$PY" -c 'import json, sys; print(json.loads(sys.argv[1]).get(sys.argv[2], ""))' "$1" "$2"; }
CPU_MODEL="$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//; s/"//g')"
BLAS_CORE="$(json_field "$MOE_CPU" openblas_coretype)"
MOE_BLAS="$(json_field "$MOE_CPU" gemm) (oneDNN / OpenBLAS $(json_field "$MOE_CPU" openblas)), $(json_field "$MOE_CPU" kernels) kernels"
TORCH_BLAS="OpenBLAS $(env ${BLAS_CORE:+"OPENBLAS_CORETYPE=$BLAS_CORE"} "$PY" -c 'import torch, ctypes
lib = ctypes.CDLL("libopenblas.so.0"); lib.openblas_get_corename.restype = ctypes.c_char_p
print(lib.openblas_get_corename().decode())' 2>/dev/null || echo unknown)"
side_blas() { [[ "$1" == ct2-* ]] && echo "oneDNN" || echo "$MOE_BLAS"; }  # a decoding side's
emit "{\"side\": \"machine\", \"work\": \"machine\", \"cpu\": \"$CPU_MODEL\", \"moe\": $MOE_CPU, \"torch_blas\": \"$TORCH_BLAS\", \"ct2_blas\": \"oneDNN\"}"

model_args() {  # moe-train options and bench_cpu_torch.py options of a model
  case "$1" in
    demo) MOE_MODEL=(--model.d_model 256 --model.ffn_dim 1024 --model.heads 4 --model.enc_layers 3 --model.dec_layers 3)
          TORCH_MODEL=(--d 256 --ffn 1024 --heads 4 --layers 3) ;;
    big) MOE_MODEL=(--model.d_model 512 --model.ffn_dim 2048 --model.heads 8 --model.enc_layers 6 --model.dec_layers 6)
         TORCH_MODEL=(--d 512 --ffn 2048 --heads 8 --layers 6) ;;
    *) echo "bench-cpu: unknown model $1 (demo, big)" >&2; exit 2 ;;
  esac
}
moe_train() {  # model threads run_dir updates [minutes]: the demo recipe as scripts/demo.sh runs it
  local extra=(--train.max_updates "$4" --train.log_every "$WARMUP")
  if [[ -n "${5:-}" ]]; then extra=(--train.max_minutes "$5" --train.log_every 100); fi
  model_args "$1"
  rm -rf "$3"
  threads_flag "$2"
  timed "$3.time" "${ENV_T[@]}" "$BIN/moe-train" "${THREAD_ARGS[@]}" --config "$ROOT/recipes/multi30k-en-de.yml" --run_dir "$3" \
    --data.train.src "$DATA/train.src" --data.train.tgt "$DATA/train.tgt" \
    --data.valid.src "$DATA/valid.src" --data.valid.tgt "$DATA/valid.tgt" \
    --data.vocab.src "$DATA/vocab.spm" --data.vocab.tgt "$DATA/vocab.spm" \
    --train.device cpu --train.dtype f32 "${MOE_MODEL[@]}" --model.dropout 0.1 --train.max_tokens 4000 \
    --train.warmup_updates 200 --train.valid_every 100000 --train.save_every 100000 "${extra[@]}" \
    >"$3.log" 2>&1 || { echo "bench-cpu: moe-train failed, see $3.log" >&2; tail -5 "$3.log" >&2; exit 1; }
}

if [[ ",$ONLY," == *,train,* ]]; then
  for model in ${MODELS//,/ }; do
    for t in $THREADS; do
      for r in $(seq "$REPEAT"); do
        run="$OUT/train-$model-t$t"
        moe_train "$model" "$t" "$run" $((WARMUP + UPDATES))
        # the first logged window (the untimed warm-up updates) is left out
        emit "$("$PY" - "$run/metrics.jsonl" "$model" "$t" "$UPDATES" "$(cpu_fields "$run.time" "$MOE_BLAS")" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"type":"train"' in l.replace(" ", "")][1:]
tok = sum(r["tokens"] for r in rows); sec = sum(r["tokens"] / r["tokens_per_s"] for r in rows)
r = {"side": "moe", "work": "train", "model": sys.argv[2], "threads": int(sys.argv[3]),
     "updates": int(sys.argv[4]), "tokens": tok, "seconds": round(sec, 3), "tokens_per_s": round(tok / sec, 1)}
r.update(json.loads("{" + sys.argv[5] + "}"))
print(json.dumps(r))
EOF
)"
        model_args "$model"; torch_env "$t"
        line=$(timed "$run.torch.time" "${TORCH_ENV[@]}" "$PY" "$ROOT/scripts/bench_cpu_torch.py" train --src "$DATA/train.src.ids" --tgt "$DATA/train.tgt.ids" \
               "${TORCH_MODEL[@]}" --threads "$t" --updates "$UPDATES" --warmup "$WARMUP")
        emit "${line%\}}, \"model\": \"$model\", $(cpu_fields "$run.torch.time" "$TORCH_BLAS")}"
      done
    done
  done
fi

if [[ ",$ONLY," == *,decode,* ]]; then
  if [[ -z "$CKPT" ]]; then
    CKPT="$OUT/demo-model/checkpoint.last.safetensors"
    if [[ ! -f "$CKPT" ]]; then
      echo "bench-cpu: training the demo model for $TRAIN_MINUTES minutes for the decoding runs" >&2
      moe_train demo 0 "$OUT/demo-model" 0 "$TRAIN_MINUTES"
    fi
  fi
  # the source ids for PyTorch, encoded with the vocabulary stored in the checkpoint (tensor vocab.src)
  "$PY" - "$CKPT" "$OUT/checkpoint-vocab.spm" <<'EOF'
import json, struct, sys
with open(sys.argv[1], "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    h = json.loads(f.read(n))
    lo, hi = h["vocab.src"]["data_offsets"]
    f.seek(8 + n + lo)
    open(sys.argv[2], "wb").write(f.read(hi - lo))
EOF
  SRC="$DATA/test.src" REF="$DATA/test.tgt"  # --lines N: the first N lines (a smoke run)
  if (( LINES > 0 )); then head -n "$LINES" "$SRC" > "$OUT/test.src"; head -n "$LINES" "$REF" > "$OUT/test.tgt"; SRC="$OUT/test.src" REF="$OUT/test.tgt"; fi
  "$BIN/moe-vocab" encode --vocab "$OUT/checkpoint-vocab.spm" -i "$SRC" -o "$OUT/test.src.ckpt.ids"
  # sizes on disk: the checkpoint, its pre-quantized form (moe-average --quantize int8), CTranslate2's models
  CKPT8="$OUT/checkpoint.int8.safetensors"
  "$BIN/moe-average" --quantize int8 -o "$CKPT8" "$CKPT" 2>/dev/null
  size_mib() { du -sk "$1" | awk '{ printf "%.1f", $1 / 1024 }'; }
  emit "{\"side\": \"moe\", \"work\": \"size\", \"f32_mib\": $(size_mib "$CKPT"), \"int8_mib\": $(size_mib "$CKPT8")}"
  if [[ -n "$CT2_BUILD" ]]; then
    "$PY" "$PEERS/convert_moe.py" "$CKPT" "$OUT/ct2-f32" --quantization float32 --force >/dev/null
    "$PY" "$PEERS/convert_moe.py" "$CKPT" "$OUT/ct2-int8" --quantization int8 --force >/dev/null
    "$PY" "$PEERS/spm_pieces.py" encode "$OUT/ct2-f32/source.spm" < "$SRC" > "$OUT/test.src.pieces"
    MAXPOS="$("$PY" -c 'import sys; sys.path.insert(0, sys.argv[1]); from convert_moe import load_safetensors, parse_model_yaml; print(parse_model_yaml(load_safetensors(sys.argv[2])[1]["moe.model"])["max_positions"])' "$PEERS" "$CKPT")"
    emit "{\"side\": \"ct2\", \"work\": \"size\", \"f32_mib\": $(size_mib "$OUT/ct2-f32"), \"int8_mib\": $(size_mib "$OUT/ct2-int8")}"
  fi
  bleu() { "$BIN/moe-score" bleu -r "$REF" -i "$1" | grep -o 'BLEU[^0-9]*[0-9.]*' | grep -o '[0-9.]*$'; }
  decode_run() {  # SIDE BEAM THREADS HYP: one timed decoding run and its JSON line
    local side="$1" beam="$2" t="$3" hyp="$4" line=""
    case "$side" in
      moe-f32|moe-int8)
        threads_flag "$t"
        local q=(); [[ "$side" == moe-int8 ]] && q=(--quantize int8)
        timed "$hyp.time" "${ENV_T[@]}" "$BIN/moe-translate" "${THREAD_ARGS[@]}" -q -m "$CKPT" --device cpu "${q[@]}" \
          --beam "$beam" -i "$SRC" -o "$hyp" "${DECODE_ARGS[@]}" ;;
      ct2-f32|ct2-int8)
        pin "$t"
        timed "$hyp.time" env "LD_LIBRARY_PATH=$CT2_BUILD" "OMP_NUM_THREADS=$t" "${PIN[@]}" "$CT2_BUILD/cli/ct2-translator" \
          --model "$OUT/ct2-${side#ct2-}" --compute_type "$([[ $side == ct2-f32 ]] && echo float32 || echo int8)" \
          --device cpu --intra_threads "$t" --inter_threads 1 --beam_size "$beam" --batch_type tokens --batch_size 4096 \
          --max_decoding_length 200 --max_input_length "$MAXPOS" --src "$OUT/test.src.pieces" --out "$hyp.pieces"
        "$PY" "$PEERS/spm_pieces.py" decode "$OUT/ct2-f32/source.spm" < "$hyp.pieces" > "$hyp" ;;
      torch)
        torch_env "$t"
        line=$(timed "$hyp.time" "${TORCH_ENV[@]}" "$PY" "$ROOT/scripts/bench_cpu_torch.py" decode --checkpoint "$CKPT" \
               --src "$OUT/test.src.ckpt.ids" --beam "$beam" --threads "$t" --max-tokens 4096 --out "$hyp.ids")
        emit "${line%\}}, $(cpu_fields "$hyp.time" "$TORCH_BLAS")}"
        return ;;
    esac
    local wall; read -r wall _ <"$hyp.time"
    emit "{\"side\": \"$side\", \"work\": \"decode\", \"beam\": $beam, \"threads\": $t, \"seconds\": $wall, \"bleu\": $(bleu "$hyp"), $(cpu_fields "$hyp.time" "$(side_blas "$side")")}"
  }
  if [[ -z "$SIDES" ]]; then SIDES="moe-f32 moe-int8 torch"; [[ -n "$CT2_BUILD" ]] && SIDES="moe-f32 moe-int8 ct2-f32 ct2-int8 torch"; fi
  for beam in $BEAMS; do
    for t in $THREADS; do
      for r in $(seq "$REPEAT"); do  # the sides interleaved, so that a change in load touches them alike
        for side in $SIDES; do sleep "$PAUSE"; decode_run "$side" "$beam" "$t" "$OUT/test.b$beam.t$t.$side"; done
      done
    done
  done
fi
"$PY" "$ROOT/scripts/bench_cpu_torch.py" summary --src "$RESULTS"
