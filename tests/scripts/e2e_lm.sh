#!/usr/bin/env bash
# End-to-end language modelling on the CPU: trains recipes/ci-tiny-lm.yml (a 2-layer Transformer LM,
# word vocabulary of the 2,000 most frequent words) on the first 1,500 lines of the WikiText-103
# sample for 200 updates, checks from metrics.jsonl that the loss clearly falls, scores the first 300
# validation lines with moe-score ppl (the checkpoint's validation windows: 64 tokens scoring 32) and
# checks a finite perplexity equal to the logged validation perplexity of checkpoint.best and clearly
# below the add-one unigram perplexity of the same text under the same vocabulary (computed here),
# continues prompts with moe-generate (one line per prompt; sampled n-best blocks reproducible from the seed; no
# word pair twice with --no-repeat-ngram-size 2) and
# with moe-serve's /v1/generate (the same lines, greedy and sampled),
# runs scripts/evaluate.sh on the run (the same perplexity, as a Markdown row and a JSON line), checks data
# weighting (weights of 1 change no logged loss, weights of 2 double it, a bad weight names its file and line), then
# checks that an interrupted-and-resumed run logs exactly the losses of an uninterrupted one.
# Usage (ctest passes both): e2e_lm.sh BIN_DIR SHARED_DATA_DIR. Exit 77 = skipped (no data).
set -euo pipefail
BIN="${1:?usage: e2e_lm.sh BIN_DIR SHARED_DATA_DIR}"
DATA="${2:?usage: e2e_lm.sh BIN_DIR SHARED_DATA_DIR}/wikitext-103-sample"
RECIPE="$(cd "$(dirname "$0")/../.." && pwd)/recipes/ci-tiny-lm.yml"
UPDATES="${E2E_UPDATES:-200}"
E2E_NAME=e2e_lm
source "$(dirname "$0")/lib/e2e_common.sh"
if [[ ! -f "$DATA/wiki.train.tokens" ]]; then echo "e2e_lm: no WikiText-103 sample in $DATA: skipped"; exit 77; fi
for p in moe-train moe-score moe-generate moe-serve; do [[ -x "$BIN/$p" ]] || { echo "e2e_lm: $BIN/$p is missing" >&2; exit 1; }; done
WORK="$(mktemp -d "${TMPDIR:-/tmp}/moe-e2e-lm.XXXXXX")"
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$WORK"' EXIT
fail() { e2e_fail "$@"; }

head -n 1500 "$DATA/wiki.train.tokens" > "$WORK/train.txt"
head -n 300 "$DATA/wiki.valid.tokens" > "$WORK/valid.txt"
common=(--config "$RECIPE" --data.train.text "$WORK/train.txt" --data.valid.text "$WORK/valid.txt"
        --data.vocab.path "$WORK/vocab.words")

# 1. Train; the loss must fall clearly (mean of the last three logged losses vs the first).
"$BIN/moe-train" "${common[@]}" --run_dir "$WORK/run" --train.max_updates "$UPDATES" || fail "moe-train"
e2e_check_loss_falls "$WORK/run" 1.5
grep -q '"type":"valid"' "$WORK/run/metrics.jsonl" || fail "no validation line in metrics.jsonl"
for f in checkpoint.best.safetensors checkpoint.last.safetensors checkpoint.last.state.safetensors; do
  [[ -f "$WORK/run/$f" ]] || fail "$f is missing"
done

# 1b. Data weighting (data/lm_token_weights.h): from the trained model, 20 updates each. Word weights of 1 (one per
#     word of each line, </s> left to its default 1) log exactly the losses of the unweighted run; line weights of 2
#     log twice its losses (Adam is blind to the gradient's scale: the same steps; both without clip_norm, which
#     would not be); a bad weight is an error naming the file and line (e2e_common.sh).
awk '{ gsub(/[^ ]+/, "1"); print }' "$WORK/train.txt" > "$WORK/train.w-ones"
awk '{ print 2 }' "$WORK/train.txt" > "$WORK/train.w-twice"
e2e_check_data_weighting "$WORK" "$WORK/train.w-ones" "$WORK/train.w-twice" \
  "train.w-ones (word): 1500 lines, mean weight per token 1\b" "${common[@]}" \
  --train.init_from "$WORK/run/checkpoint.last.safetensors"

# 2. The add-one unigram perplexity of the valid text (training counts, the trained vocabulary,
#    other words as <unk>, one </s> per line): what a model without context would reach.
unigram="$(awk -v V="$(($(wc -l < "$WORK/vocab.words") + 4))" '
  FNR == 1 { f++ }
  f == 1 { v[$1] = 1; next }
  f == 2 { for (i = 1; i <= NF; i++) { c[($i in v) ? $i : "<unk>"]++; n++ } c["</s>"]++; n++; next }
  f == 3 { for (i = 1; i <= NF; i++) { w = ($i in v) ? $i : "<unk>"; nll -= log((c[w] + 1) / (n + V)); t++ }
           nll -= log((c["</s>"] + 1) / (n + V)); t++ }
  END { printf "%.4f", exp(nll / t) }' "$WORK/vocab.words" "$WORK/train.txt" "$WORK/valid.txt")"

# 3. Score the valid text with the best checkpoint (the windows of the validation, stored in it).
ppl="$("$BIN/moe-score" ppl -m "$WORK/run/checkpoint.best.safetensors" -i "$WORK/valid.txt" --device cpu \
  --score-only)" || fail "moe-score ppl"
logged="$(grep '"type":"valid"' "$WORK/run/metrics.jsonl" | sed -E 's/.*"ppl":([^,]*),.*/\1/' | sort -g | head -n 1)"
echo "e2e_lm: valid perplexity $ppl (logged at validation: $logged; add-one unigram: $unigram)"
awk -v p="$ppl" 'BEGIN {exit !(p == p + 0 && p > 1 && p < 1e30)}' || fail "perplexity '$ppl' is not finite"
awk -v p="$ppl" -v l="$logged" 'BEGIN {d = p - l; if (d < 0) d = -d; exit !(d < 1e-3 * l)}' ||
  fail "moe-score ppl $ppl differs from the logged validation perplexity $logged"
awk -v p="$ppl" -v u="$unigram" 'BEGIN {exit !(p < 0.9 * u)}' ||
  fail "perplexity $ppl is not clearly below the unigram perplexity $unigram"

# 3b. Continue prompts with the trained model (moe-generate): one line per prompt, the empty one included, greedy;
#     sampled n-best blocks of "index <TAB> score <TAB> text", the same for the same seed.
{ awk 'NF && n < 5 { print $1, $2, $3; n++ }' "$WORK/valid.txt"; echo; } > "$WORK/prompts.txt"  # 5 prompts, 1 empty
"$BIN/moe-generate" -m "$WORK/run/checkpoint.best.safetensors" -i "$WORK/prompts.txt" --device cpu --beam 1 \
  --max-len-b 12 -q > "$WORK/greedy.txt" || fail "moe-generate"
[[ "$(wc -l < "$WORK/greedy.txt")" == 6 ]] || fail "moe-generate wrote $(wc -l < "$WORK/greedy.txt") lines for 6 prompts"
sample() {
  "$BIN/moe-generate" -m "$WORK/run/checkpoint.best.safetensors" -i "$WORK/prompts.txt" --device cpu --sampling \
    --sampling-topp 0.9 --beam 2 --n-best 2 --max-len-b 12 --seed 3 -q
}
sample > "$WORK/sampled.txt" || fail "moe-generate --sampling"
[[ "$(cut -f1 "$WORK/sampled.txt" | tr '\n' ' ')" == "0 0 1 1 2 2 3 3 4 4 5 5 " ]] ||
  fail "moe-generate --sampling --n-best 2: not two lines per prompt in order"
cmp -s "$WORK/sampled.txt" <(sample) || fail "moe-generate --sampling gave other samples for the same seed"
echo "e2e_lm: moe-generate: $(head -n 1 "$WORK/prompts.txt") -> $(head -n 1 "$WORK/greedy.txt")"
# --no-repeat-ngram-size 2: no word pair twice in a prompt and its continuation (longer, where a tiny LM loops).
for block in 0 2; do
  "$BIN/moe-generate" -m "$WORK/run/checkpoint.best.safetensors" -i "$WORK/prompts.txt" --device cpu --beam 3 \
    --max-len-b 40 --no-repeat-ngram-size "$block" -q > "$WORK/no_repeat_$block.txt" ||
    fail "moe-generate --no-repeat-ngram-size $block"
done
python3 - "$WORK/prompts.txt" "$WORK/no_repeat_2.txt" "$WORK/no_repeat_0.txt" <<'PY' || fail "--no-repeat-ngram-size 2"
import sys
def repeats(prompts, outputs):
    lines = [(p.split() + o.split()) for p, o in zip(open(prompts).read().split("\n"), open(outputs).read().split("\n"))]
    return sum(max(0, len(w) - 1) - len(set(zip(w, w[1:]))) for w in lines)
blocked, plain = repeats(sys.argv[1], sys.argv[2]), repeats(sys.argv[1], sys.argv[3])
print(f"e2e_lm: repeated word pairs in beam-3 continuations: {plain} plain, {blocked} with --no-repeat-ngram-size 2")
sys.exit(blocked != 0)
PY

# 3c. moe-serve's /v1/generate continues the same prompts (in concurrent requests) exactly as moe-generate did,
#     greedy and sampled; /v1/translate refuses a language model, naming "model"; /metrics counts the requests.
CLIENT="$(dirname "$0")/lib/serve_client.py"
e2e_start_server "$WORK/run/checkpoint.best.safetensors" "$WORK/serve.log" --name lm --quiet
python3 "$CLIENT" same "$PORT" /v1/generate "$WORK/prompts.txt" "$WORK/greedy.txt" '{"beam": 1, "max_len_b": 12}' 1 ||
  fail "/v1/generate greedy"
python3 "$CLIENT" same "$PORT" /v1/generate "$WORK/prompts.txt" "$WORK/sampled.txt" \
  '{"sampling": true, "sampling_topp": 0.9, "beam": 2, "max_len_b": 12, "seed": 3}' 2 || fail "/v1/generate sampling"
status="$(curl -s -o "$WORK/translate.json" -w '%{http_code}' -H 'Content-Type: application/json' \
  -d '{"text": ["a"]}' "http://127.0.0.1:$PORT/v1/translate")"
[[ "$status" == 400 ]] && grep -q '"field":"model"' "$WORK/translate.json" ||
  fail "/v1/translate to a language model answered $status $(cat "$WORK/translate.json"), not 400 naming model"
curl -sf "http://127.0.0.1:$PORT/metrics" | grep -F 'moe_serve_requests_total{endpoint="generate",status="200"} 4' > /dev/null ||
  fail "/metrics does not count the 4 generate requests"
e2e_stop_server

# 4. The papers' evaluation chain (scripts/evaluate.sh): checkpoint.best with the recipe's windows
#    (64 / 32, as stored): the same perplexity, as a Markdown row and a JSON line.
eval_out="$("$(dirname "$0")/../../scripts/evaluate.sh" "$WORK/run" --text "$WORK/valid.txt" --bin "$BIN" \
  --device cpu)" || fail "scripts/evaluate.sh"
echo "$eval_out"
grep -q "^| run | checkpoint | windows" <<< "$eval_out" || fail "evaluate.sh printed no Markdown table"
json="$(tail -n 1 <<< "$eval_out")"
ppl_eval="$(sed -E 's/.*"ppl": ([^,]*),.*/\1/' <<< "$json")"
awk -v p="$ppl_eval" -v l="$ppl" 'BEGIN {d = p - l; if (d < 0) d = -d; exit !(d < 1e-3 * l)}' ||
  fail "evaluate.sh's perplexity '$ppl_eval' differs from moe-score ppl's $ppl"

# 5. Resume: 40 updates straight vs 20 + resume to 40; the logged losses must be identical.
e2e_check_resume "$WORK" "${common[@]}"
echo "e2e_lm: OK"
