#!/usr/bin/env bash
# moe against PyTorch on the CPU, side by side in one run (issue 13; results in docs/PERF.md):
#   scripts/bench-cpu.sh [--out DIR] [--bin DIR] [--threads "1 2"] [--updates 30] [--only train,decode]
#       [--models demo,big] [--checkpoint CKPT] [--train-minutes 5] [--repeat 1] [--decode-arg ARG]...
# Training: target tokens/s of moe-train and of scripts/bench_cpu_torch.py (the same model written in
# PyTorch) on Multi30k (data-prep/multi30k.sh from ../shared/data, SentencePiece 8k, 4000-token
# batches, f32, dropout 0.1), --updates timed updates after 5 untimed, for the demo model (d 256,
# FFN 1024, 4 heads, 3+3, pre-norm, tied) and "big" (d 512, FFN 2048, 8 heads, 6+6), at each thread
# count. Decoding: beam 5 and greedy of test_2016_flickr (1000 lines) with one demo checkpoint
# (--checkpoint, else the demo model trained here for --train-minutes), moe-translate against the
# same weights in PyTorch with a key/value cache; wall seconds. Every run (both sides, training and
# decoding) also records the process's user and system CPU seconds (/usr/bin/time), whole process.
# Prints one JSON line per measurement (also appended to DIR/results.jsonl) and a ratio table
# (moe / PyTorch speed: > 1 means moe is faster). PyTorch is /usr/bin/python3's (Debian python3-torch).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT="$ROOT/runs/bench-cpu"; BIN="$ROOT/build-cpu/bin"; THREADS="1 2"; UPDATES=30; WARMUP=5; ONLY="train,decode"
MODELS="demo,big"; CKPT=""; TRAIN_MINUTES=5; REPEAT=1; PY=/usr/bin/python3; DECODE_ARGS=()
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
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench-cpu: unknown option $1 (try --help)" >&2; exit 2 ;;
  esac
done
for b in moe-train moe-translate moe-vocab; do
  [[ -x "$BIN/$b" ]] || { echo "bench-cpu: $BIN/$b missing (build it, or give --bin)" >&2; exit 2; }
done
"$PY" -c "import torch" 2>/dev/null || { echo "bench-cpu: $PY has no torch (scripts/install-deps.sh --with bench)" >&2; exit 2; }
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
timed() { local f="$1"; shift; /usr/bin/time -f '%e %U %S %F %R' -o "$f" "$@"; }  # FILE CMD...: wall user sys faults
cpu_fields() {  # FILE: the JSON fields of a timed run
  local wall user sys major minor; read -r wall user sys major minor < <(tail -1 "$1")
  echo "\"wall\": $wall, \"user\": $user, \"system\": $sys, \"page_faults\": $((major + minor))"
}
# Builds from before --cpu-threads (a baseline) get the thread count through OpenBLAS instead.
threads_flag() {
  if "$BIN/moe-train" --cpu-threads 1 --help >/dev/null 2>&1; then THREAD_ARGS=(--cpu-threads "$1"); ENV_T=(env)
  else THREAD_ARGS=(); ENV_T=(env "OPENBLAS_NUM_THREADS=$1"); if [[ "$1" == 0 ]]; then ENV_T=(env); fi; fi
}

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
        emit "$("$PY" - "$run/metrics.jsonl" "$model" "$t" "$UPDATES" "$(cpu_fields "$run.time")" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"type":"train"' in l.replace(" ", "")][1:]
tok = sum(r["tokens"] for r in rows); sec = sum(r["tokens"] / r["tokens_per_s"] for r in rows)
r = {"side": "moe", "work": "train", "model": sys.argv[2], "threads": int(sys.argv[3]),
     "updates": int(sys.argv[4]), "tokens": tok, "seconds": round(sec, 3), "tokens_per_s": round(tok / sec, 1)}
r.update(json.loads("{" + sys.argv[5] + "}"))
print(json.dumps(r))
EOF
)"
        model_args "$model"
        line=$(timed "$run.torch.time" "$PY" "$ROOT/scripts/bench_cpu_torch.py" train --src "$DATA/train.src.ids" --tgt "$DATA/train.tgt.ids" \
               "${TORCH_MODEL[@]}" --threads "$t" --updates "$UPDATES" --warmup "$WARMUP")
        emit "${line%\}}, \"model\": \"$model\", $(cpu_fields "$run.torch.time")}"
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
  "$BIN/moe-vocab" encode --vocab "$OUT/checkpoint-vocab.spm" -i "$DATA/test.src" -o "$OUT/test.src.ckpt.ids"
  for beam in 5 1; do
    for t in $THREADS; do
      for r in $(seq "$REPEAT"); do
        hyp="$OUT/test.b$beam.t$t"
        threads_flag "$t"
        timed "$hyp.time" "${ENV_T[@]}" "$BIN/moe-translate" "${THREAD_ARGS[@]}" -q -m "$CKPT" \
          --beam "$beam" -i "$DATA/test.src" -o "$hyp.moe" "${DECODE_ARGS[@]}"
        read -r wall _ <"$hyp.time"
        emit "{\"side\": \"moe\", \"work\": \"decode\", \"beam\": $beam, \"threads\": $t, \"seconds\": $wall, $(cpu_fields "$hyp.time")}"
        line=$(timed "$hyp.torch.time" "$PY" "$ROOT/scripts/bench_cpu_torch.py" decode --checkpoint "$CKPT" \
               --src "$OUT/test.src.ckpt.ids" --beam "$beam" --threads "$t" --max-tokens 4096 --out "$hyp.torch.ids")
        emit "${line%\}}, $(cpu_fields "$hyp.torch.time")}"
      done
    done
  done
fi
"$PY" "$ROOT/scripts/bench_cpu_torch.py" summary --src "$RESULTS"
