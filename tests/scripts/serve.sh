#!/usr/bin/env bash
# moe-serve end to end, on loopback, every step bounded (clients: tests/scripts/lib/serve_client.py):
# trains recipes/ci-tiny.yml briefly on 300 Multi30k pairs, translates 200 test lines with moe-translate
# (1-best, and 3-best for the first 60), then against moe-serve:
#  1. equality: the 200 lines as 40 concurrent requests, and the n-best lines, are moe-translate's output;
#     40 lines with target prefixes (the reference's first two words on every other line, "" between) sent
#     beside the same lines without any are moe-translate --prefix's output and moe-translate's; 40 lines
#     sampled (top-k 5, 2 samples, a seed) in concurrent requests are moe-translate --sampling's n-best output;
#     40 lines with "alignment": "hard" are moe-translate --alignment hard's "text ||| s-t ..." lines, and
#     with "alignment_words": true as well, --alignment-words' lines (links between words);
#  2. bad input: truncated and 10 MB bodies, a slow client, invalid UTF-8, unknown fields, n_best > beam,
#     empty text, ... each a 4xx with a JSON error naming the field, and a valid request right after each
#     answers correctly;
#  3. clients hanging up mid-request do not disturb the others, and the sentences they left queued are
#     dropped, not decoded (/metrics: 499s, moe_serve_dropped_sentences_total, sentences decoded);
#  4. load: 16 clients of one-line requests for SERVE_LOAD_SECONDS (8 s here, 30 with --full as the issue
#     asks) against moe-serve with dynamic batching and as long against a second server with --max-tokens 1
#     (one request at a time), in alternating slices so that a change in the machine's load (ctest runs
#     tests side by side) falls on both: no error, every answer the right line's, p50/p99 and CPU time per
#     request printed, batches of 4+ sentences on average, batched throughput at least SERVE_MIN_SPEEDUP
#     (1.2) times one at a time. Both servers run with --cpu-threads 2 (the worker on both cores; on two
#     cores moe-serve's default is 1): there a decoding step's OpenMP synchronisation is a large fixed cost
#     that batching shares, and we measured 1.4x to 2.1x. The issue asks 3x, which this decoder cannot
#     give on a CPU: a step of 16 sentences costs 10 to 11 times a step of one (the per-row work of top-k,
#     log-softmax and cache reorders dominates), and with one thread, the faster setting in absolute
#     terms, batching gains next to nothing for this model (docs/PERF.md "moe-serve");
#  5. /metrics in Prometheus text format; /health and /v1/models; /v1/score against moe-score pairs (with
#     "alignment": hard, against --alignment hard, and with "alignment_words", --alignment-words); /v1/generate
#     to a translation model is a 400 naming "model";
#  6. --shortlist: one sentence per batch, the answers are moe-translate --shortlist's; a language model fused in
#     (recipes/ci-tiny-lm.yml trained 40 updates on the German side with the same vocabulary, served beside the
#     translation model): /v1/translate and /v1/score with "lm" are moe-translate --lm's and moe-score pairs --lm's;
#     a full queue answers 503 with Retry-After, a request past --request-timeout-s 504;
#  7. SIGTERM during load: the server exits 0 and answered exactly the requests the clients received.
# Usage (ctest passes both): serve.sh BIN_DIR SHARED_DATA_DIR [--full]. Exit 77 = skipped (no data).
set -euo pipefail
E2E_NAME=serve
source "$(dirname "$0")/lib/e2e_common.sh"
e2e_tiny_setup "$@"
LOAD_SECONDS="${SERVE_LOAD_SECONDS:-8}" ROUNDS=4 MIN_SPEEDUP="${SERVE_MIN_SPEEDUP:-1.2}"
[[ "${3:-}" == --full ]] && LOAD_SECONDS=30 ROUNDS=6
CLIENT="$(dirname "$0")/lib/serve_client.py"
for p in moe-train moe-translate moe-score moe-serve moe-vocab; do [[ -x "$BIN/$p" ]] || e2e_fail "$BIN/$p is missing"; done
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$WORK"' EXIT

"$BIN/moe-train" "${TINY[@]}" --run_dir "$WORK/run" --train.max_updates 150 --train.valid_every 1000 \
  --train.log_every 50 > "$WORK/train.log" 2>&1 || { cat "$WORK/train.log"; e2e_fail "moe-train"; }
CKPT="$WORK/run/checkpoint.last.safetensors"
head -n 200 "$DATA/test_2016_flickr.en" > "$WORK/test.en"
head -n 60 "$WORK/test.en" > "$WORK/test60.en"
head -n 60 "$DATA/test_2016_flickr.de" > "$WORK/test60.de"
"$BIN/moe-translate" -m "$CKPT" -i "$WORK/test.en" -o "$WORK/ref.txt" --device cpu -q || e2e_fail "moe-translate"
"$BIN/moe-translate" -m "$CKPT" -i "$WORK/test60.en" -o "$WORK/ref3.txt" --n-best 3 --device cpu -q ||
  e2e_fail "moe-translate --n-best 3"
head -n 40 "$WORK/test.en" > "$WORK/test40.en"
head -n 40 "$DATA/test_2016_flickr.de" | awk 'NR % 2 {print $1, $2; next} {print ""}' > "$WORK/prefix40.txt"
"$BIN/moe-translate" -m "$CKPT" -i "$WORK/test40.en" -o "$WORK/refp.txt" --prefix "$WORK/prefix40.txt" \
  --device cpu -q || e2e_fail "moe-translate --prefix"
"$BIN/moe-translate" -m "$CKPT" -i "$WORK/test40.en" -o "$WORK/refs.txt" --sampling --sampling-topk 5 --beam 2 \
  --n-best 2 --seed 3 --device cpu -q || e2e_fail "moe-translate --sampling"
"$BIN/moe-translate" -m "$CKPT" -i "$WORK/test40.en" -o "$WORK/refa.txt" --alignment hard --device cpu -q ||
  e2e_fail "moe-translate --alignment"
"$BIN/moe-translate" -m "$CKPT" -i "$WORK/test40.en" -o "$WORK/refw.txt" --alignment hard --alignment-words \
  --device cpu -q || e2e_fail "moe-translate --alignment-words"

start_server() {  # LOG ARGS...: the trained checkpoint as "tiny" (e2e_common.sh: sets SERVER and PORT)
  local log="$1"
  shift
  e2e_start_server "$CKPT" "$log" --name tiny "$@"
}

start_server "$WORK/serve1.log" --cpu-threads 2 --max-wait-ms 20 --read-timeout-s 3 --max-lines 64 --max-line-bytes 4096
grep -q "listening on http://127.0.0.1:$PORT" "$WORK/serve1.log" || e2e_fail "no startup line with the address"
# The listen backlog (ss's Send-Q of a listening socket): raised from Debian cpp-httplib's 5, which dropped
# and reset connections of 16 clients under load.
if command -v ss > /dev/null; then
  backlog="$(ss -Hltn "sport = :$PORT" | awk '{print $3}' | head -n 1)"
  [[ "${backlog:-0}" -ge 128 ]] || e2e_fail "listen backlog '$backlog', not >= 128"
fi
python3 "$CLIENT" equal "$PORT" "$WORK/test.en" "$WORK/ref.txt" "$WORK/ref3.txt" 60 || e2e_fail "equality"
python3 "$CLIENT" prefix "$PORT" "$WORK/test.en" "$WORK/ref.txt" "$WORK/prefix40.txt" "$WORK/refp.txt" ||
  e2e_fail "prefixes"
python3 "$CLIENT" same "$PORT" /v1/translate "$WORK/test40.en" "$WORK/refs.txt" \
  '{"sampling": true, "sampling_topk": 5, "beam": 2, "seed": 3}' 2 || e2e_fail "sampling"
python3 "$CLIENT" same "$PORT" /v1/translate "$WORK/test40.en" "$WORK/refa.txt" '{"alignment": "hard"}' 1 ||
  e2e_fail "alignments"
python3 "$CLIENT" same "$PORT" /v1/translate "$WORK/test40.en" "$WORK/refw.txt" \
  '{"alignment": "hard", "alignment_words": true}' 1 || e2e_fail "word-level alignments"
python3 "$CLIENT" bad "$PORT" "$WORK/test.en" "$WORK/ref.txt" || e2e_fail "bad input"
python3 "$CLIENT" disconnect "$PORT" "$WORK/test.en" "$WORK/ref.txt" || e2e_fail "disconnecting clients"
BATCHED="$SERVER" BATCHED_PORT="$PORT"
start_server "$WORK/serve2.log" --cpu-threads 2 --max-tokens 1 --quiet  # one request at a time
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }  # user + system CPU time of a process
cpu0=("$(cpu_ticks "$BATCHED")" "$(cpu_ticks "$SERVER")")
python3 "$CLIENT" compare "$BATCHED_PORT" "$PORT" "$WORK/test.en" "$WORK/ref.txt" 16 "$LOAD_SECONDS" "$ROUNDS" \
  "$WORK/compare.json" || e2e_fail "load"
cpu1=("$(cpu_ticks "$BATCHED")" "$(cpu_ticks "$SERVER")")
echo "{\"batched\": $(( cpu1[0] - cpu0[0] )), \"single\": $(( cpu1[1] - cpu0[1] )), \"hz\": $(getconf CLK_TCK)}" > "$WORK/cpu.json"
e2e_stop_server
! grep -q "POST /v1/translate" "$WORK/serve2.log" || e2e_fail "--quiet still logged requests"
SERVER="$BATCHED" PORT="$BATCHED_PORT"
python3 - "$WORK/compare.json" "$WORK/cpu.json" "$MIN_SPEEDUP" <<'EOF' || e2e_fail "dynamic batching is not ${MIN_SPEEDUP}x faster"
import json, sys
r, cpu = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
b, s = r["batched"], r["single"]
ratio = b["per_second"] / s["per_second"]
cpu_b, cpu_s = (1e3 * cpu[k] / cpu["hz"] / r[k]["requests"] for k in ("batched", "single"))
print(f"serve: 16 clients: batched {b['per_second']:.1f} req/s (p50 {b['p50_ms']:.0f} ms, p99 {b['p99_ms']:.0f} ms, "
      f"{cpu_b:.0f} CPU ms per request), one at a time {s['per_second']:.1f} req/s (p50 {s['p50_ms']:.0f} ms, "
      f"p99 {s['p99_ms']:.0f} ms, {cpu_s:.0f} CPU ms per request): {ratio:.1f}x the throughput, "
      f"{cpu_s / cpu_b:.1f}x less CPU per request")
sys.exit(0 if ratio >= float(sys.argv[3]) else 1)
EOF

# The other endpoints.
metrics="$(curl -sf "http://127.0.0.1:$PORT/metrics")" || e2e_fail "/metrics"
for m in 'moe_serve_requests_total{endpoint="translate",status="200"}' 'moe_serve_requests_total{endpoint="translate",status="400"}' \
         'moe_serve_request_seconds_bucket{le="+Inf"}' moe_serve_batch_sentences_count moe_serve_queue_sentences \
         moe_serve_tokens_per_second moe_serve_memory_bytes; do
  grep -qF "$m" <<< "$metrics" || e2e_fail "/metrics lacks $m"
done
batched_mean="$(awk '/^moe_serve_batch_sentences_sum/ {s = $2} /^moe_serve_batch_sentences_count/ {c = $2} END {print s / c}' <<< "$metrics")"
echo "serve: /metrics: $(grep -c '^moe_' <<< "$metrics") samples; mean sentences per decoded batch $batched_mean"
awk -v m="$batched_mean" 'BEGIN {exit !(m >= 4)}' || e2e_fail "batches of $batched_mean sentences on average: requests were not batched"
curl -sf "http://127.0.0.1:$PORT/v1/models" | grep '"name":"tiny"' > /dev/null || e2e_fail "/v1/models does not list tiny"
status="$(curl -s -o "$WORK/generate.json" -w '%{http_code}' -H 'Content-Type: application/json' -d '{"text": ["a"]}' \
  "http://127.0.0.1:$PORT/v1/generate")"
[[ "$status" == 400 ]] && grep -q '"field":"model"' "$WORK/generate.json" ||
  e2e_fail "/v1/generate to a translation model answered $status $(cat "$WORK/generate.json"), not 400 naming model"
"$BIN/moe-score" pairs -m "$CKPT" --src "$WORK/test60.en" --tgt "$WORK/test60.de" --device cpu --alignment hard \
  > "$WORK/pairs.txt" 2>/dev/null || e2e_fail "moe-score pairs"
"$BIN/moe-score" pairs -m "$CKPT" --src "$WORK/test60.en" --tgt "$WORK/test60.de" --device cpu --alignment hard \
  --alignment-words > "$WORK/pairsw.txt" 2>/dev/null || e2e_fail "moe-score pairs --alignment-words"
python3 - "$PORT" "$WORK/test60.en" "$WORK/test60.de" "$WORK/pairs.txt" "$WORK/pairsw.txt" <<'EOF' ||
import json, sys, urllib.request
port, src, tgt, ref, ref_words = sys.argv[1:]
lines = lambda p: open(p, encoding="utf-8").read().split("\n")[:-1]
for words, ref in ((False, ref), (True, ref_words)):
    body = {"src": lines(src), "tgt": lines(tgt), "alignment": "hard", "alignment_words": words}
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/score", json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    got = json.load(urllib.request.urlopen(req, timeout=60))["scores"]
    want = [l.split("\t") for l in lines(ref)]
    assert len(got) == len(want), (len(got), len(want))
    for i, (g, (lp, n, links)) in enumerate(zip(got, want)):
        assert f"{g['log_prob']:.6f}" == lp and g["tokens"] == int(n), (words, i, g, lp, n)
        assert " ".join(f"{s}-{t}" for s, t in g["alignment"]) == links, (words, i, g["alignment"], links)
print(f"serve: /v1/score: {len(got)} pairs equal moe-score pairs --alignment hard, and with --alignment-words "
      "(scores and links)")
EOF
  e2e_fail "/v1/score differs from moe-score pairs"
e2e_stop_server
grep -q "POST /v1/translate 200" "$WORK/serve1.log" || e2e_fail "no request log lines"

# --shortlist (translator/shortlist.h): one sentence per batch (--max-tokens 1) on both sides, so that each
# sentence's list is the same: the server's answers are moe-translate --shortlist's.
"$BIN/moe-vocab" lex -i "$WORK/train.en" --tgt "$WORK/train.de" --src-vocab "$WORK/vocab.spm" -o "$WORK/lex.s2t" \
  > /dev/null || e2e_fail "moe-vocab lex"
"$BIN/moe-translate" -m "$CKPT" -i "$WORK/test40.en" -o "$WORK/refsl.txt" --shortlist "$WORK/lex.s2t" 50 10 \
  --max-tokens 1 --device cpu -q || e2e_fail "moe-translate --shortlist"
cmp -s "$WORK/refsl.txt" <(head -n 40 "$WORK/ref.txt") && e2e_fail "the shortlist changed no translation"
start_server "$WORK/serve5.log" --max-tokens 1 --shortlist "$WORK/lex.s2t" 50 10
grep -q "model 'tiny': shortlist '.*lex.s2t': [0-9]* pairs (0 skipped" "$WORK/serve5.log" ||
  e2e_fail "no shortlist line in the log: $(cat "$WORK/serve5.log")"
python3 "$CLIENT" same "$PORT" /v1/translate "$WORK/test40.en" "$WORK/refsl.txt" '{}' 1 || e2e_fail "shortlist"
e2e_stop_server

# A language model fused in ("lm", "lm_weight"): a German LM over the translation model's vocabulary, served beside
# it; /v1/translate and /v1/score with it answer what moe-translate --lm and moe-score pairs --lm give.
"$BIN/moe-train" --config "$(dirname "$0")/../../recipes/ci-tiny-lm.yml" --data.train.text "$WORK/train.de" \
  --data.vocab.path "$WORK/vocab.spm" --data.vocab.type bpe --run_dir "$WORK/lm" --train.max_updates 40 \
  > "$WORK/lm.log" 2>&1 || { cat "$WORK/lm.log"; e2e_fail "moe-train (the LM)"; }
LM="$WORK/lm/checkpoint.last.safetensors"
"$BIN/moe-translate" -m "$CKPT" --lm "$LM" --lm-weight 0.5 -i "$WORK/test40.en" -o "$WORK/reffl.txt" --device cpu -q ||
  e2e_fail "moe-translate --lm"
cmp -s "$WORK/reffl.txt" <(head -n 40 "$WORK/ref.txt") && e2e_fail "the fused LM changed no translation"
"$BIN/moe-score" pairs -m "$CKPT" --lm "$LM" --lm-weight 0.5 --src "$WORK/test60.en" --tgt "$WORK/test60.de" \
  --device cpu > "$WORK/pairsfl.txt" 2>/dev/null || e2e_fail "moe-score pairs --lm"
start_server "$WORK/serve6.log" -m "$LM" --name de-lm
python3 "$CLIENT" same "$PORT" /v1/translate "$WORK/test40.en" "$WORK/reffl.txt" '{"lm": "de-lm", "lm_weight": 0.5}' 1 ||
  e2e_fail "a fused LM"
python3 - "$PORT" "$WORK/test60.en" "$WORK/test60.de" "$WORK/pairsfl.txt" <<'EOF' ||
import json, sys, urllib.request
port, src, tgt, ref = sys.argv[1:]
lines = lambda p: open(p, encoding="utf-8").read().split("\n")[:-1]
body = {"src": lines(src), "tgt": lines(tgt), "lm": "de-lm", "lm_weight": 0.5}
req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/score", json.dumps(body).encode(),
                             headers={"Content-Type": "application/json"})
got = json.load(urllib.request.urlopen(req, timeout=60))["scores"]
want = [l.split("\t") for l in lines(ref)]
assert len(got) == len(want), (len(got), len(want))
for i, (g, (lp, n)) in enumerate(zip(got, want)):  # step by step in batches of their own: equal to 1e-5
    assert abs(g["log_prob"] - float(lp)) <= 1e-5 * abs(float(lp)) and g["tokens"] == int(n), (i, g, lp, n)
print(f"serve: a fused LM: 40 translations equal moe-translate --lm's, {len(got)} pair scores moe-score pairs --lm's")
EOF
  e2e_fail "/v1/score with a fused LM differs from moe-score pairs --lm"
e2e_stop_server

# A 2-sentence queue and a 50 ms timeout: 503 with Retry-After, 504. A queued job waits up to 200 ms for
# company, past the timeout whatever the machine's speed (a fast decode on a loaded machine once answered
# every queued request in time: no 504).
start_server "$WORK/serve4.log" --max-queue-lines 2 --request-timeout-s 0.05 --max-wait-ms 200 --quiet
python3 "$CLIENT" overload "$PORT" "$WORK/test.en" "$WORK/ref.txt" || e2e_fail "queue limit and timeout"
e2e_stop_server

# SIGTERM during load: every request the server answered reached its client, and it exits 0.
start_server "$WORK/serve3.log" --max-wait-ms 20
python3 "$CLIENT" until-stopped "$PORT" "$WORK/test.en" "$WORK/ref.txt" 8 "$WORK/received" &
CLIENTS=$!
answered_so_far() { curl -sf "http://127.0.0.1:$PORT/metrics" |
  sed -n 's/^moe_serve_requests_total{endpoint="translate",status="200"} //p'; }
for _ in $(seq 300); do (( $(answered_so_far || echo 0) + 0 >= 8 )) && break; sleep 0.2; done  # then SIGTERM mid-load
e2e_stop_server
wait "$CLIENTS" || e2e_fail "clients saw wrong answers during the shutdown"
answered="$(sed -n 's/.*stopped by SIGTERM: \([0-9]*\) translate requests answered.*/\1/p' "$WORK/serve3.log")"
[[ -n "$answered" && "$answered" == "$(cat "$WORK/received")" ]] ||
  e2e_fail "moe-serve answered ${answered:-?} requests but the clients received $(cat "$WORK/received")"
(( answered > 0 )) || e2e_fail "no request was answered before SIGTERM"
echo "serve: SIGTERM during load: $answered requests answered and received, exit status 0"
echo "serve: OK"
