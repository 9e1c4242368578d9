# The steps of scripts/gpu-check.sh (sourced by it; it sets ROOT, OUT, LOGS, PACK, BIN, DATA, EMULATE
# and DEADLINE). Each step_* runs in a subshell with its output in LOGS/<step>.log, bounds its long
# commands by the step's end (bounded), writes its findings as lines of LOGS/<step>.figures (note) and
# returns 0, 1 (failed) or 124 (out of time). Preflights set what the steps run with: RUN_ENV (the
# library path of moe's programs: the pack's and CUDA's), WORK, the data layout of the pack (WORK/data), the
# kernel list (KERNELS) and the sizes (e2e: gpu-check-e2e.sh; study: gpu-check-study.sh). Covered by the rehearsal,
# tests/scripts/gpu_check_rehearsal.sh (scripts/gpu-check.sh --emulate).
ROWS=()
RUN_ENV=()
add_row() { ROWS+=("$1|$2|$3|$4"); }
scaled() { echo $(( $1 * BUDGET / 450 )); }  # a step's share of a budget of 450 s, for this budget
note() { echo "$*" >> "$LOGS/$STEP.figures"; }
# bounded CMD...: CMD, stopped at the end of the running step (exit 124 then).
bounded() {
  local l=$(( STEP_END - SECONDS ))
  (( l > 0 )) || return 124
  timeout -k 5 "$l" "$@"
}
# run_step NAME MIN MAX FUNCTION: FUNCTION with at most MAX seconds, skipped when less than MIN are left.
run_step() {
  local name="$1" min="$2" max="$3" fn="$4" left=$(( DEADLINE - SECONDS )) t0=$SECONDS rc status figures
  if (( left < min )); then
    add_row "$name" skipped 0 "would overrun: needs at least $min s, $left s of the budget left"
    echo "== gpu-check: $name skipped ($left s left)"
    return
  fi
  STEP="$name" STEP_END=$(( SECONDS + (left < max ? left : max) ))
  echo "== gpu-check: $name ($(date -u +%H:%M:%S), at most $(( STEP_END - SECONDS )) s)"
  : > "$LOGS/$name.figures"
  ( "$fn" ) > "$LOGS/$name.log" 2>&1
  rc=$?
  status=ok
  (( rc == 124 )) && status="TIMED OUT"
  (( rc != 0 && rc != 124 )) && status=FAILED
  [[ -f "$LOGS/$name.not-here" ]] && status="not here"
  figures="$(awk 'NR > 1 {printf "; "} {printf "%s", $0}' "$LOGS/$name.figures" | tr '|' '/')"
  add_row "$name" "$status" $(( SECONDS - t0 )) "$figures"
  echo "   $status: $figures"
}

write_summary() {  # PREFLIGHT_RC
  {
    echo "# moe GPU check$( (( EMULATE )) && echo ' (rehearsal on the CUDA emulator)')"
    echo
    # On a device the pack's commit: the working tree travels there without its current git metadata.
    local commit
    commit="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    (( EMULATE )) || commit="$(awk 'NR == 1 {print $2}' "$WORK/moe-gpu/MANIFEST" 2>/dev/null || echo unknown)"
    echo "$(date -u +%Y-%m-%dT%H:%MZ), moe $commit," \
         "$( (( EMULATE )) && echo 'emulated cuda:0' || nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)," \
         "budget $BUDGET s, used $(( SECONDS - START )) s"
    echo
    echo "| step | result | seconds | what it found |"
    echo "|---|---|---:|---|"
    local r
    for r in "${ROWS[@]}"; do IFS='|' read -r n s t f <<< "$r"; echo "| $n | $s | $t | $f |"; done
    echo
    echo "Logs: logs.tar.gz (one log per step; e2e/ holds each model's train logs and metrics)."
    (( $1 == 0 )) || echo "The preflight failed: nothing ran. Fix what it names (docs/GPU-FIRST-RUN.md)."
  } > "$OUT/summary.md"
}

# The folder holding a CUDA library on this machine: the loader's cache, the toolkit, pip's nvidia-* packages.
lib_dir() {
  local d
  for d in $(ldconfig -p 2>/dev/null | awk -v n="$1" '$1 == n {print $NF}' | xargs -r -n1 dirname) \
           /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib \
           /usr/local/cuda/extras/CUPTI/lib64 \
           $(python3 -c 'import glob, site; print(" ".join(p for s in site.getsitepackages() for p in glob.glob(s + "/nvidia/*/lib")))' 2>/dev/null); do
    [[ -e "$d/$1" ]] && { echo "$d"; return 0; }
  done
  return 1
}

preflight_device() {
  local missing=() t lib dir dirs=() t0=$SECONDS
  for t in nvidia-smi python3 timeout tar ldd; do command -v "$t" >/dev/null || missing+=("$t (not on PATH)"); done
  [[ -f "$PACK/moe-gpu.tar.xz" ]] || missing+=("$PACK/moe-gpu.tar.xz (make it with scripts/gpu-pack.sh, carry gpu-pack)")
  nvidia-smi -L 2>/dev/null | grep '^GPU' > /dev/null || missing+=("a GPU (nvidia-smi -L lists none)")
  WORK="${TMPDIR:-/tmp}/moe-gpu-check"
  if (( ${#missing[@]} == 0 )); then
    rm -rf "$WORK" && mkdir -p "$WORK"
    if command -v xz >/dev/null; then tar -C "$WORK" -xJf "$PACK/moe-gpu.tar.xz"
    else python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$PACK/moe-gpu.tar.xz" "$WORK"; fi ||
      missing+=("an unpacked pack (tar failed on $PACK/moe-gpu.tar.xz)")
    BIN="$WORK/moe-gpu/bin" KERNELS="$WORK/moe-gpu/kernels.txt" TRACE_LIB="$WORK/moe-gpu/lib/libmoe-kernel-trace.so"
    ln -sfn "$WORK/moe-gpu/data" "$WORK/data"
    for lib in libcublas.so.13 libcublasLt.so.13 libnccl.so.2 libcupti.so.13; do
      if dir="$(lib_dir "$lib")"; then [[ " ${dirs[*]} " == *" $dir "* ]] || dirs+=("$dir")
      elif [[ "$lib" == libcupti.so.13 ]]; then TRACE_LIB=""  # only the never-launched list needs it
      else missing+=("$lib (CUDA 13's; not in ldconfig -p, /usr/local/cuda or pip's nvidia packages)"); fi
    done
    # The pack's lib/ first: Debian's OpenMPI libraries have a RUNPATH of their own, which the programs'
    # RPATH does not override for them.
    # OPAL_PREFIX and the isolated singleton: programs built with MPI call MPI_Init even for one rank
    # (test_gpu does), which without them aborts looking for OpenMPI's daemon and plugins elsewhere.
    RUN_ENV=("LD_LIBRARY_PATH=$WORK/moe-gpu/lib:$(IFS=:; echo "${dirs[*]}")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
             "OPAL_PREFIX=$WORK/moe-gpu/lib/openmpi" OMPI_MCA_ess_singleton_isolated=1)
    while read -r lib; do missing+=("$lib (needed by the pack's programs)"); done < <(
      env "${RUN_ENV[@]}" ldd "$BIN"/* 2>/dev/null | awk '/not found/ {print $1}' | sort -u)
  fi
  { echo "missing: ${missing[*]:-nothing}"; echo "${RUN_ENV[*]}"; cat "$WORK/moe-gpu/MANIFEST" 2>/dev/null; } > "$LOGS/preflight.log"
  if (( ${#missing[@]} )); then
    add_row preflight FAILED $(( SECONDS - t0 )) "missing: $(printf '%s; ' "${missing[@]}" | sed 's/; $//')"
    return 1
  fi
  e2e_sizes_device; study_sizes_device
  add_row preflight ok $(( SECONDS - t0 )) "pack $(head -1 "$WORK/moe-gpu/MANIFEST"); CUDA libraries from ${dirs[*]}"
}

preflight_emulated() {
  local missing=() p f t0=$SECONDS
  for p in test_gpu moe-train moe-translate moe-score moe-bench moe-serve; do [[ -x "$BIN/$p" ]] || missing+=("$BIN/$p"); done
  for f in multi30k/train.en multi30k/train.de multi30k/val.en multi30k/val.de multi30k/test_2016_flickr.en \
           multi30k/test_2016_flickr.de wikitext-103-sample/wiki.train.tokens wikitext-103-sample/wiki.valid.tokens; do
    [[ -f "$DATA/$f" ]] || missing+=("$DATA/$f")
  done
  (( ${#missing[@]} )) || "$BIN/moe-bench" --has-cuda >/dev/null || missing+=("an emulated cuda:0 ($BIN is not an emulator build)")
  if (( ${#missing[@]} )); then
    add_row preflight FAILED $(( SECONDS - t0 )) "missing: ${missing[*]}"
    return 1
  fi
  WORK="$(mktemp -d "${TMPDIR:-/tmp}/moe-gpu-rehearsal.XXXXXX")"
  trap 'rm -rf "$WORK"' EXIT
  # The pack's layout (data-prep/multi30k.sh; the vocabulary is built by the first training run), tiny.
  local m="$WORK/data/multi30k" w="$WORK/data/wikitext-103-sample" split
  mkdir -p "$m" "$w"
  for split in train:train:200 val:valid:8 test_2016_flickr:test:4; do
    IFS=: read -r from to n <<< "$split"
    head -n "$n" "$DATA/multi30k/$from.en" > "$m/$to.src"
    head -n "$n" "$DATA/multi30k/$from.de" > "$m/$to.tgt"
  done
  head -n 300 "$DATA/wikitext-103-sample/wiki.train.tokens" > "$w/wiki.train.tokens"
  head -n 30 "$DATA/wikitext-103-sample/wiki.valid.tokens" > "$w/wiki.valid.tokens"
  KERNELS="$LOGS/launched.txt.compiled" TRACE_LIB=""  # the emulator writes both lists (MOE_KERNEL_TRACE_OUT)
  e2e_sizes_emulated; study_sizes_emulated
  add_row preflight ok $(( SECONDS - t0 )) "emulator build $BIN; tiny Multi30k and WikiText-103 subsets"
}

step_env() {
  if (( EMULATE )); then
    note "emulated cuda:0 (no GPU, driver or CUDA libraries: emu/README.md)"
  else
    nvidia-smi
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,power.limit --format=csv
    note "$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -1)"
    local lib
    for lib in libcublas.so.13 libcublasLt.so.13 libnccl.so.2; do
      note "$(basename "$(readlink -f "$(lib_dir "$lib")/$lib")")"
    done
    command -v nvcc >/dev/null && note "nvcc $(nvcc --version | sed -n 's/.*release //p')"
    note "compute-sanitizer: $(compute-sanitizer --version 2>/dev/null | grep -o 'Version [^ ]*' || echo 'not found')"
  fi
  note "$(python3 -c 'import torch; print("torch", torch.__version__, "cuda" if torch.cuda.is_available() else "(no CUDA)")' 2>/dev/null ||
          echo 'no PyTorch')"
  cat "$LOGS/$STEP.figures"
}

# note_result [SUFFIX]: Catch2's result line of the step's test_gpu run (or why it did not run).
note_result() {
  local line
  line="$(grep -E 'All tests passed|test cases:|no GPU available' "$LOGS/$STEP.log" | tail -1)"
  note "${line:-test_gpu: $(tail -1 "$LOGS/$STEP.log")}${1:-}"
}

# never_launched LAUNCHED: the moe kernels of KERNELS (name TAB readable name) not in LAUNCHED.
never_launched() {
  local launched="$1" total missing
  total="$(awk -F'\t' '$2 ~ /moe::/' "$KERNELS" | wc -l)"
  awk -F'\t' 'NR == FNR { seen[$0] = 1; next } $2 ~ /moe::/ && !($1 in seen) { print $2 }' "$launched" "$KERNELS" |
    sort > "$LOGS/never-launched.txt"
  missing="$(wc -l < "$LOGS/never-launched.txt")"
  note "never launched: $missing of $total moe kernels$( (( missing )) && echo " (first: $(head -1 "$LOGS/never-launched.txt"))")"
}

# The tensor-core and asynchronous instructions against the PTX ISA's layout tables: on a GPU, the proof
# that the emulator's layouts are the hardware's (tests/gpu/ptx_instructions_parity_test.cpp).
step_ptx() {
  local rc
  bounded env "${RUN_ENV[@]}" MOE_REQUIRE_GPU=1 "$BIN/test_gpu" --durations yes "[ptx]"
  rc=$?
  note_result " (tags [ptx])"
  grep -q 'no sm_90a code' "$LOGS/$STEP.log" && note "the Hopper probes did not run: the pack has no sm_90a code"
  return $rc
}

step_parity() {
  local tags=() trace=() rc
  (( EMULATE )) && tags=("[cast],[unary]")  # the emulated suite runs whole in ctest
  [[ -n "$TRACE_LIB" ]] && trace=("CUDA_INJECTION64_PATH=$TRACE_LIB")
  bounded env "${RUN_ENV[@]}" "${trace[@]}" MOE_REQUIRE_GPU=1 MOE_KERNEL_TRACE_OUT="$LOGS/launched.txt" \
    "$BIN/test_gpu" --durations yes "${tags[@]}"
  rc=$?
  note_result "${tags[*]:+ (tags ${tags[*]})}"
  if [[ -s "$LOGS/launched.txt" && -s "$KERNELS" ]]; then never_launched "$LOGS/launched.txt"
  else note "never-launched list unavailable (no kernel trace: $([[ -n "$TRACE_LIB" || $EMULATE == 1 ]] && echo 'it wrote nothing' || echo 'no libcupti'))"; fi
  return $rc
}

# no_bench SPEC: a Catch2 test spec without the hidden timing cases ([.bench]) its tags also select
# ("[a],[b]" -> "[a]~[.bench],[b]~[.bench]"): under a sanitizer they only take time.
no_bench() { echo "${1//,/~[.bench],}~[.bench]"; }

step_sanitize() {
  local tools=(memcheck racecheck) tags=("[sort]" "[topk]" "[attention]" "[grouped_gemm]" "[moe_gating],[moe]")
  local tool tag runs n=0 rc=0 log errors results
  if (( EMULATE )); then tools=(emulator) tags=("[dropout]" "[categorical]")
  elif ! command -v compute-sanitizer >/dev/null; then note "compute-sanitizer not found on this machine"; return 1; fi
  [[ -n "$SAN_TAGS" ]] && IFS=';' read -ra tags <<< "$SAN_TAGS"
  [[ -n "$SAN_TOOLS" && $EMULATE == 0 ]] && IFS=, read -ra tools <<< "$SAN_TOOLS"
  runs=$(( ${#tools[@]} * ${#tags[@]} ))
  for tool in "${tools[@]}"; do
    results=()
    for tag in "${tags[@]}"; do
      # An equal share of what is left, but at least 10 s while they last: most tags take a few seconds, and
      # the time a quick one leaves goes to the next (equal shares alone skipped the first of many tags).
      local left=$(( STEP_END - SECONDS )) share
      share=$(( left / (runs - n) ))
      (( share < 10 )) && share=$(( left < 10 ? left : 10 ))
      n=$(( n + 1 ))
      log="$LOGS/sanitize-$tool-$(echo "$tag" | tr -c 'a-z_\n' '_').log"
      if (( share < 5 )); then results+=("$tag not run (time)"); continue; fi
      if (( EMULATE )); then  # the emulator's checker (races, bounds, uninitialised reads) is always on
        timeout -k 5 "$share" env "${RUN_ENV[@]}" MOE_REQUIRE_GPU=1 "$BIN/test_gpu" "$tag" > "$log" 2>&1
      else
        timeout -k 5 "$share" env "${RUN_ENV[@]}" MOE_REQUIRE_GPU=1 compute-sanitizer --tool "$tool" --error-exitcode 9 \
          --print-limit 20 "$BIN/test_gpu" "$(no_bench "$tag")" > "$log" 2>&1
      fi
      local status=$?
      if grep -q '^No test cases matched' "$log"; then  # Catch2 exits 0: a mistyped tag checked nothing
        results+=("$tag FAILED (no test case has this tag)"); rc=1; continue
      fi
      case $status in
        0) results+=("$tag ok") ;;
        124|137) results+=("$tag TIMED OUT after $share s"); rc=124 ;;
        *) errors="$(grep -oE '(ERROR SUMMARY: [0-9]+ errors?|RACECHECK SUMMARY: [0-9]+ hazards?)' "$log" | tail -1)"
           results+=("$tag FAILED${errors:+ ($errors)}$(grep -c '^moe-emu:' "$log" | sed 's/^0$//; s/.\+/ (& emulator reports)/')"); rc=1 ;;
      esac
    done
    note "$tool: $(printf '%s, ' "${results[@]}" | sed 's/, $//')"
  done
  return $rc
}

step_nccl() {
  if ! grep -qa ncclCommInitRankConfig "$BIN/test_gpu"; then  # built without NCCL
    note "not built: $( (( EMULATE )) && echo 'the emulator has no NCCL' || echo 'this test_gpu has no NCCL backend')"
    touch "$LOGS/$STEP.not-here"
    return 0
  fi
  # MPI's singleton mode, without a daemon, with the pack's OpenMPI plugins (RUN_ENV).
  bounded env "${RUN_ENV[@]}" MOE_REQUIRE_GPU=1 "$BIN/test_gpu" "[nccl]"
  local rc=$?
  note_result
  return $rc
}

step_bench() {
  local filter='^(gemm\.(ffn_up|square)|attention\.base_causal|layer_norm|cross_entropy|adam|grouped_gemm\.(e8|e64|e8_skew)|layer\.(moe_ffn|moa)|model\.transformer_base)$'
  local args=(--device cuda) targs=() rc=0
  if (( EMULATE )); then filter='^layer_norm$' args=(--device cuda --scale tiny --repeat 1 --warmup 0 --no-flush) targs=(--device cpu --scale tiny --repeat 1 --warmup 0 --no-flush --no-compile); fi
  bounded env "${RUN_ENV[@]}" "$BIN/moe-bench" "${args[@]}" --filter "$filter" --json-out "$LOGS/moe-bench.jsonl" || rc=$?
  python3 "$ROOT/scripts/internal/bench-figures.py" moe "$LOGS/moe-bench.jsonl" >> "$LOGS/$STEP.figures" || rc=1
  # Other tensor-core variants beside the defaults (ops/kernel_variants.h), to choose by: the grouped GEMM's
  # wgmma and wmma, and attention's mma.sync pair beside the Hopper (wgmma) kernels.
  local run kernels rows
  (( EMULATE )) || for run in 'grouped_gemm:wgmma ^grouped_gemm\.e8$' 'grouped_gemm:wmma ^grouped_gemm\.e8$' \
      'attention_forward:mma,attention_backward:mma ^attention\.base_causal$'; do
    read -r kernels rows <<< "$run"
    bounded env "${RUN_ENV[@]}" MOE_KERNEL="$kernels" "$BIN/moe-bench" "${args[@]}" --no-ceilings \
      --filter "$rows" --json-out "$LOGS/moe-bench-${kernels//[:,]/-}.jsonl" > /dev/null || rc=$?
    python3 "$ROOT/scripts/internal/bench-figures.py" moe "$LOGS/moe-bench-${kernels//[:,]/-}.jsonl" >> "$LOGS/$STEP.figures" || rc=1
  done
  if ! python3 -c 'import torch' 2>/dev/null; then note "no PyTorch here: bench_torch.py not run"; return $rc; fi
  (( EMULATE )) || python3 -c 'import torch; assert torch.cuda.is_available()' || { note "PyTorch sees no GPU"; return 1; }
  PYTHONUNBUFFERED=1 bounded python3 "$ROOT/scripts/bench_torch.py" "${targs[@]}" --filter "$filter" \
    --json-out "$LOGS/torch-bench.jsonl" || rc=$?
  python3 "$ROOT/scripts/bench_torch.py" --compare "$LOGS/moe-bench.jsonl" "$LOGS/torch-bench.jsonl" > "$LOGS/compare.txt" || rc=1
  python3 "$ROOT/scripts/internal/bench-figures.py" torch "$LOGS/torch-bench.jsonl" >> "$LOGS/$STEP.figures" || rc=1
  return $rc
}

# moe-serve on cuda:0 (scripts/bench-serve.sh): requests/s and latency, batched against one at a time, for
# SERVE_CLIENTS clients; the model is --serve-model or the e2e step's Transformer.
step_serve() {
  local ck="${SERVE_MODEL:-$WORK/e2e/transformer/cuda/checkpoint.last.safetensors}" src="$WORK/serve.src"
  [[ -f "$ck" ]] || { note "no model: give --serve-model CKPT, or run the e2e step's transformer first"; return 1; }
  head -n "$SERVE_LINES" "$WORK/data/multi30k/test.src" > "$src"
  bounded env "${RUN_ENV[@]}" "$ROOT/scripts/bench-serve.sh" -m "$ck" -i "$src" --bin "$BIN" --device cuda \
    --clients "$SERVE_CLIENTS" --seconds "$SERVE_SECONDS" --beam 5 "${SERVE_ARGS[@]}" > "$LOGS/serve.md"
  local rc=$?
  cat "$LOGS/serve.md"
  note "model $(basename "$(dirname "$ck")")/$(basename "$ck"), beam 5${SERVE_ARGS[*]:+ (${SERVE_ARGS[*]})}"
  # "| C | batched | p50 | p99 | single | p50 | p99 | ratio |[ differ |]" -> one line per client count
  awk -F' *[|] *' 'NR > 2 { printf "%s clients: %s against %s req/s one at a time (%s), p50 %s/%s ms, p99 %s/%s ms%s\n",
         $2, $3, $6, $9, $4, $7, $5, $8, ($10 == "" ? "" : "; unlike moe-translate: " $10) }' "$LOGS/serve.md" >> "$LOGS/$STEP.figures"
  return $rc
}

source "$ROOT/scripts/internal/gpu-check-e2e.sh"
source "$ROOT/scripts/internal/gpu-check-study.sh"
