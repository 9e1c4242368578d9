#!/usr/bin/env bash
# moe-serve's throughput and latency (docs/SERVING.md, docs/PERF.md): translates SRC once with moe-translate
# (the reference every answer is checked against), then for each client count C in --clients runs C
# concurrent clients of one-line requests for --seconds against moe-serve with dynamic batching and against
# moe-serve with --max-tokens 1 (one request at a time), and prints a Markdown table: requests/s, p50 and
# p99 latency, and the ratio. Clients: tests/scripts/lib/serve_client.py (stdlib Python, loopback).
#   scripts/bench-serve.sh -m CKPT -i SRC [--bin DIR] [--clients "1 4 16"] [--seconds 20] [--device cpu]
#       [--threads N]      (--cpu-threads of moe-translate and both servers; default: the physical cores)
#       [--beam K]         (the requests' beam size and moe-translate's; default 5)
#       [--dtype D]        (f32 or bf16, moe-translate's and both servers'; default f32)
#       [--max-len-b N]    (translations of at most N tokens: max_len_a 0, max_len_b N; default moe-translate's)
#       [--shortlist "FILE [FIRST BEST THRESHOLD]"]  (a lexical shortlist, moe-translate's and both servers'; a
#                           sentence's list depends on its batch, so use --differ-ok)
#       [--differ-ok]      (an answer unlike moe-translate's is counted, not an error: on a GPU the GEMMs may
#                           round differently as the batch around a sentence changes; a last column says how many)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN="$ROOT/build/bin" CKPT="" SRC="" CLIENTS="1 4 16" SECONDS_EACH=20 DEVICE=cpu ARGS=() BEAM=5 DIFFER_OK=0 MAX_LEN_B=""
while (( $# )); do
  case "$1" in
    -m) CKPT="$2"; shift 2 ;;
    -i) SRC="$2"; shift 2 ;;
    --bin) BIN="$2"; shift 2 ;;
    --clients) CLIENTS="$2"; shift 2 ;;
    --seconds) SECONDS_EACH="$2"; shift 2 ;;
    --device) DEVICE="$2"; shift 2 ;;
    --threads) ARGS+=(--cpu-threads "$2"); shift 2 ;;
    --beam) BEAM="$2"; shift 2 ;;
    --dtype) ARGS+=(--dtype "$2"); shift 2 ;;
    --differ-ok) DIFFER_OK=1; shift ;;
    --max-len-b) MAX_LEN_B="$2"; shift 2 ;;
    --shortlist) read -r -a shortlist_values <<< "$2"; ARGS+=(--shortlist "${shortlist_values[@]}"); shift 2 ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench-serve: unknown option $1 (try --help)" >&2; exit 2 ;;
  esac
done
[[ -f "$CKPT" && -f "$SRC" ]] || { echo "bench-serve: give -m CHECKPOINT and -i SOURCE_LINES" >&2; exit 2; }
WORK="$(mktemp -d "${TMPDIR:-/tmp}/moe-bench-serve.XXXXXX")"
SERVER=""
trap '[[ -n "$SERVER" ]] && kill "$SERVER" 2>/dev/null; rm -rf "$WORK"' EXIT
"$BIN/moe-translate" -m "$CKPT" -i "$SRC" -o "$WORK/ref.txt" --device "$DEVICE" -q --beam "$BEAM" "${ARGS[@]}" \
  ${MAX_LEN_B:+--max-len-a 0 --max-len-b "$MAX_LEN_B"}

run() {  # run MODE CLIENTS [server args]: one load run, result in $WORK/MODE-C.json
  local mode="$1" c="$2"
  shift 2
  rm -f "$WORK/port"
  "$BIN/moe-serve" -m "$CKPT" --port 0 --port-file "$WORK/port" --device "$DEVICE" --quiet "${ARGS[@]}" "$@" \
    2> "$WORK/serve.log" &
  SERVER=$!
  for _ in $(seq 300); do [[ -s "$WORK/port" ]] && break; sleep 0.1; done
  [[ -s "$WORK/port" ]] || { cat "$WORK/serve.log" >&2; exit 1; }
  python3 "$ROOT/tests/scripts/lib/serve_client.py" load "$(cat "$WORK/port")" "$SRC" "$WORK/ref.txt" "$c" \
    "$SECONDS_EACH" "$WORK/$mode-$c.json" "$BEAM" "$DIFFER_OK" "$MAX_LEN_B" >&2
  kill -TERM "$SERVER"
  wait "$SERVER"
  SERVER=""
}
differ_head=("" "")
((DIFFER_OK)) && differ_head=(" unlike moe-translate |" "---|")
echo "| clients | batched req/s | p50 ms | p99 ms | one at a time req/s | p50 ms | p99 ms | ratio |${differ_head[0]}"
echo "|---|---|---|---|---|---|---|---|${differ_head[1]}"
for c in $CLIENTS; do
  run batched "$c"
  run single "$c" --max-tokens 1
  python3 - "$WORK/batched-$c.json" "$WORK/single-$c.json" "$DIFFER_OK" <<'EOF'
import json, sys
b, s = (json.load(open(p)) for p in sys.argv[1:3])
differ = f" {b['differ']} of {b['requests']}, {s['differ']} of {s['requests']} |" if sys.argv[3] == "1" else ""
print(f"| {b['clients']} | {b['per_second']:.1f} | {b['p50_ms']:.0f} | {b['p99_ms']:.0f} | {s['per_second']:.1f} | "
      f"{s['p50_ms']:.0f} | {s['p99_ms']:.0f} | {b['per_second'] / s['per_second']:.2f}x |{differ}")
EOF
done
