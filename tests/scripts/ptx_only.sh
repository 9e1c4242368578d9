#!/usr/bin/env bash
# Kernels reach the tensor-core and asynchronous instructions only through cuda/common/ptx.cuh (and its
# ptx_hopper.cuh, ptx_wgmma.cuh), never through raw inline assembly, so that every one of them runs under
# the CUDA emulator with its checks (docs/CUDA-EMULATOR.md). Fails on an `asm` statement anywhere else in
# cuda/ or tests/ (.cu, .cuh, .h). Run by ctest (args: bin dir, data dir — unused).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
found="$(grep -rnE '\basm\s*(volatile\s*)?\(' "$ROOT/cuda" "$ROOT/tests" --include='*.cu' --include='*.cuh' --include='*.h' |
         grep -vE '^'"$ROOT"'/cuda/common/ptx(_hopper|_wgmma)?\.cuh:' || true)"
if [[ -n "$found" ]]; then
  echo "ptx_only: inline assembly outside cuda/common/ptx*.cuh (use or extend ptx.cuh):"
  echo "${found//$ROOT\//}"
  exit 1
fi
echo "ptx_only: no inline assembly outside cuda/common/ptx*.cuh"
