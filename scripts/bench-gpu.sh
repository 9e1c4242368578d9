#!/usr/bin/env bash
# The one command a GPU session runs to measure moe (docs/PERF.md, "How to measure"):
#   scripts/bench-gpu.sh OUT_DIR [--build-dir DIR] [--debs DIR] [--skip-tests] [--skip-torch] [-- moe-bench args]
# 1. installs the Debian dependencies from --debs DIR (.deb files made by scripts/bundle-deps.sh) when
#    they are missing, 2. builds moe-bench and the GPU tests if needed (Release, MOE_CUDA_ARCHITECTURES=90),
# 3. runs the `gpu`-labelled ctest parity suite, 4. runs build/bin/moe-bench --device cuda and
# 5. scripts/bench_torch.py, 6. prints both side by side. Everything lands in OUT_DIR: build.log, device.txt,
# moe-bench.txt/.jsonl, torch-bench.txt/.jsonl, compare.txt. Exit code: non-zero if any step failed.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
usage() { sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; }
OUT=""; BUILD="$ROOT/build-bench"; DEBS=""; TESTS=1; TORCH=1; BENCH_ARGS=()
while (( $# )); do
  case "$1" in
    --build-dir) BUILD="$2"; shift 2 ;;
    --debs) DEBS="$2"; shift 2 ;;
    --skip-tests) TESTS=0; shift ;;
    --skip-torch) TORCH=0; shift ;;
    --) shift; BENCH_ARGS=("$@"); break ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "bench-gpu: unknown option $1 (try --help)" >&2; exit 2 ;;
    *) [[ -z "$OUT" ]] || { echo "bench-gpu: one output folder only (got $OUT and $1)" >&2; exit 2; }; OUT="$1"; shift ;;
  esac
done
[[ -n "$OUT" ]] || { usage >&2; exit 2; }
mkdir -p "$OUT" && OUT="$(cd "$OUT" && pwd)"
status=0
step() { echo "== bench-gpu: $* ($(date -u +%H:%M:%S))"; }

source "$ROOT/scripts/internal/gpu-build.sh"
step "dependencies and build in $BUILD (log: $OUT/build.log)"
gpu_build "$BUILD" "$DEBS" "$OUT/build.log" moe-bench test_gpu || exit 1

step "device"
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,power.draw,power.limit,temperature.gpu --format=csv
  nvcc --version | tail -2
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)" 2>&1
  echo "moe $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown), $(date -u +%Y-%m-%dT%H:%MZ)"
} > "$OUT/device.txt" 2>&1
cat "$OUT/device.txt"

if (( TESTS )); then
  step "GPU parity tests (ctest -L gpu)"
  # MOE_REQUIRE_GPU=1: on this (GPU) machine a suite that finds no usable GPU fails instead of "Skipped".
  (cd "$BUILD" && MOE_REQUIRE_GPU=1 ctest -L gpu --output-on-failure) >> "$OUT/build.log" 2>&1 || {
    status=1; tail -40 "$OUT/build.log"; echo "bench-gpu: GPU tests FAILED (see build.log); benchmarking anyway" >&2; }
  grep -E "tests passed|tests failed|Skipped" "$OUT/build.log" | tail -3
fi

step "moe-bench"
rm -f "$OUT/moe-bench.jsonl"
"$BUILD/bin/moe-bench" --device cuda --json-out "$OUT/moe-bench.jsonl" "${BENCH_ARGS[@]}" 2>&1 | tee "$OUT/moe-bench.txt" ||
  status=1

if (( TORCH )); then
  step "bench_torch.py"
  rm -f "$OUT/torch-bench.jsonl"
  if python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
    PYTHONUNBUFFERED=1 python3 "$ROOT/scripts/bench_torch.py" --json-out "$OUT/torch-bench.jsonl" 2>&1 |
      tee "$OUT/torch-bench.txt" || status=1
    step "moe vs PyTorch"
    python3 "$ROOT/scripts/bench_torch.py" --compare "$OUT/moe-bench.jsonl" "$OUT/torch-bench.jsonl" | tee "$OUT/compare.txt"
  else
    echo "bench-gpu: no PyTorch with CUDA here: skipping bench_torch.py" | tee "$OUT/torch-bench.txt"
  fi
fi
step "done (exit $status); results in $OUT"
exit $status
