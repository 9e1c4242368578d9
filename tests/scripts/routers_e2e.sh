#!/usr/bin/env bash
# The MoE routers after 2017 end to end (docs/MODELS.md §3.12-3.17): recipes/ci-tiny.yml with its FFNs
# replaced by Switch top-1 with a token capacity and the z-loss, expert choice in the encoder (noisy top-2
# in the decoder), shared + fine-grained experts in every second layer, and loss-free balancing, each
# trained for 30 updates on 300 Multi30k pairs, then for each checkpoint:
#  1. moe-translate decodes 80 test lines and moe-serve gives the same lines for them sent as 40 concurrent
#     requests (its batches mix sentences as moe-translate's never do) and the same 3-best lists;
#  2. moe-score experts reports every MoE site (JSON), with the dropped fraction and capacity use where a
#     capacity factor is set, and tokens no expert took for expert choice;
#  3. moe-train --dry-run prints the experts per site, active parameters and FLOPs per token;
#  4. the loss-free bias moved during training and is in the checkpoint; moe-train --help lists the keys.
# Usage (ctest passes both): routers_e2e.sh BIN_DIR SHARED_DATA_DIR. Exit 77 = skipped (no data).
set -euo pipefail
E2E_NAME=routers_e2e
source "$(dirname "$0")/lib/e2e_common.sh"
e2e_tiny_setup "$@"
CLIENT="$(dirname "$0")/lib/serve_client.py"
for p in moe-train moe-translate moe-score moe-serve; do [[ -x "$BIN/$p" ]] || e2e_fail "$BIN/$p is missing"; done
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$WORK"' EXIT
head -n 80 "$DATA/test_2016_flickr.en" > "$WORK/test.en"
head -n 20 "$WORK/test.en" > "$WORK/test20.en"
head -n 20 "$DATA/test_2016_flickr.de" > "$WORK/test20.de"

help="$("$BIN/moe-train" --help)"
for key in capacity_factor eval_capacity_factor z_loss shared moe_every w_balance bias_rate "gating: expert_choice"; do
  grep -qF -- "$key" <<< "$help" || e2e_fail "moe-train --help does not list $key"
done

declare -A FFN=(
  [switch]="{type: moe, gating: switch, experts: 4, k: 1, hidden: 128, capacity_factor: 1.0, z_loss: 0.001}"
  [expert-choice]="{type: moe, gating: {encoder: expert_choice, decoder: noisy_topk}, experts: 4, k: 2, hidden: 64}"
  [shared]="{type: moe, gating: switch, experts: 8, k: 3, hidden: 32, shared: 1, moe_every: 2}"
  [loss-free]="{type: moe, gating: loss_free, experts: 4, k: 2, hidden: 64, bias_rate: 0.01}"
)
for name in switch expert-choice shared loss-free; do
  run="$WORK/$name"
  "$BIN/moe-train" "${TINY[@]}" --model.ffn "${FFN[$name]}" --run_dir "$run" --train.max_updates 30 \
    --train.valid_every 1000 --train.log_every 10 > "$WORK/$name.train.log" 2>&1 ||
    { cat "$WORK/$name.train.log"; e2e_fail "moe-train $name"; }
  ckpt="$run/checkpoint.last.safetensors"
  "$BIN/moe-translate" -m "$ckpt" -i "$WORK/test.en" -o "$WORK/$name.ref" --device cpu -q || e2e_fail "moe-translate $name"
  "$BIN/moe-translate" -m "$ckpt" -i "$WORK/test20.en" -o "$WORK/$name.ref3" --n-best 3 --device cpu -q ||
    e2e_fail "moe-translate --n-best 3 $name"
  rm -f "$WORK/port"
  "$BIN/moe-serve" -m "$ckpt" --name tiny --port 0 --port-file "$WORK/port" --device cpu --max-wait-ms 20 \
    2> "$WORK/$name.serve.log" &
  server=$!
  PIDS+=("$server")
  for _ in $(seq 100); do [[ -s "$WORK/port" ]] && break; sleep 0.2; done
  [[ -s "$WORK/port" ]] || { cat "$WORK/$name.serve.log"; e2e_fail "moe-serve $name did not start"; }
  python3 "$CLIENT" equal "$(cat "$WORK/port")" "$WORK/test.en" "$WORK/$name.ref" "$WORK/$name.ref3" 20 ||
    e2e_fail "$name: moe-serve differs from moe-translate"
  kill -TERM "$server"
  wait "$server" || e2e_fail "moe-serve $name exited with an error"

  "$BIN/moe-score" experts -m "$ckpt" --src "$WORK/test20.en" --tgt "$WORK/test20.de" \
    --format json > "$WORK/$name.experts.jsonl" 2> "$WORK/$name.experts.log" ||
    { cat "$WORK/$name.experts.log"; e2e_fail "moe-score experts $name"; }
  python3 - "$name" "$WORK/$name.experts.jsonl" <<'EOF' || e2e_fail "moe-score experts $name"
import json, sys
name, sites = sys.argv[1], [json.loads(l) for l in open(sys.argv[2]) if '"type":"site"' in l.replace(" ", "")]
moe = [s for s in sites if s["family"] == "moe"]
expected = {"switch": 4, "expert-choice": 4, "shared": 2, "loss-free": 4}[name]
assert len(moe) == expected, f"{len(moe)} MoE sites, not {expected}"
for s in moe:
    if name == "switch":
        assert s["capacity_factor"] == 1.0 and not s["capacity_applied"], s
        assert 0 <= s["dropped_fraction"] < 1 and 0 < s["capacity_use"] <= 1, s
    else:
        assert "capacity_factor" not in s, s
    if name == "expert-choice" and s["group"] == "encoder":
        assert s["policy"] == "expert_choice" and "max_per_token" not in s and "unrouted_fraction" in s, s
print(f"routers_e2e: {name}: {len(moe)} MoE sites reported" +
      (f", dropped {100 * moe[0]['dropped_fraction']:.1f}% at capacity 1.0" if name == "switch" else ""))
EOF
  "$BIN/moe-train" "${TINY[@]}" --model.ffn "${FFN[$name]}" --dry-run --dry-run-vocab 1000 > "$WORK/$name.dry" ||
    e2e_fail "moe-train --dry-run $name"
  grep -q "experts per site" "$WORK/$name.dry" || { cat "$WORK/$name.dry"; e2e_fail "$name: no experts in the dry run"; }
done
grep -q "1 shared" "$WORK/shared.dry" || e2e_fail "the dry run does not count the shared expert"
python3 - "$WORK/loss-free/checkpoint.last.safetensors" <<'EOF' || e2e_fail "the loss-free bias"
import json, struct, sys
with open(sys.argv[1], "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    header = json.loads(f.read(n))
    base = 8 + n
    biases = [k for k in header if k.endswith("ffn.gate.bias")]
    assert len(biases) == 4, biases
    moved = 0
    for k in biases:
        start, end = header[k]["data_offsets"]
        f.seek(base + start)
        moved += any(v != 0 for v in struct.unpack(f"<{(end - start) // 4}f", f.read(end - start)))
    assert moved == 4, f"{moved} of 4 biases moved"
print("routers_e2e: loss-free: every site's bias moved and is in the checkpoint")
EOF
echo "routers_e2e: passed"
