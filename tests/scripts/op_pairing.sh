#!/usr/bin/env bash
# Keeps the op layout honest: every CUDA op file cuda/ops/X*.cu has a CPU side lib/ops/X.h (+ .cpp),
# and every op stem in lib/ops (a .cpp with a matching .h) has CPU tests in tests/ops/X_test.cpp and
# GPU parity tests in tests/gpu/X_parity_test.cpp. The CPU GEMM backends (cpu_gemm: OpenBLAS/oneDNN
# behind matmul and grouped_gemm; int8_gemm: CPU int8 inference, out of scope on the GPU;
# transposed_weights: the f32 weight layout of CPU inference for oneDNN's GEMMs) are CPU-only by design:
# CPU tests, no kernel. beam_topk and gather_append are CPU fusions of ops that have kernels
# (beam_scores + topk; index_select + strided_copy), which they run on a GPU. Run by ctest (args: bin dir,
# data dir — unused).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
fail=0
for cu in "$ROOT"/cuda/ops/*.cu; do
  stem="$(basename "$cu" .cu)"; found=0
  for h in "$ROOT"/lib/ops/*.h; do
    op="$(basename "$h" .h)"
    [[ "$stem" == "$op" || "$stem" == "$op"_* ]] && found=1
  done
  (( found )) || { echo "op_pairing: cuda/ops/$stem.cu has no lib/ops/<stem>.h"; fail=1; }
done
for cpp in "$ROOT"/lib/ops/*.cpp; do
  stem="$(basename "$cpp" .cpp)"
  [[ -f "$ROOT/lib/ops/$stem.h" ]] || continue           # helpers such as attention_cpu.cpp
  [[ "$stem" == index_errors || "$stem" == kernel_variants ]] && continue  # error reporting, the kernel table: not ops
  [[ -f "$ROOT/tests/ops/${stem}_test.cpp" ]] || { echo "op_pairing: lib/ops/$stem has no tests/ops/${stem}_test.cpp"; fail=1; }
  [[ "$stem" == cpu_gemm || "$stem" == int8_gemm || "$stem" == transposed_weights ]] && continue  # CPU-only (above)
  [[ "$stem" == beam_topk || "$stem" == gather_append ]] && continue  # CPU fusions of paired ops (above)
  [[ -f "$ROOT/tests/gpu/${stem}_parity_test.cpp" ]] || { echo "op_pairing: lib/ops/$stem has no tests/gpu/${stem}_parity_test.cpp"; fail=1; }
  ls "$ROOT"/cuda/ops/"$stem"*.cu >/dev/null 2>&1 || { echo "op_pairing: lib/ops/$stem has no CUDA kernel cuda/ops/$stem*.cu"; fail=1; }
done
(( fail == 0 )) && echo "op_pairing: every op has a CPU reference, a CUDA kernel, CPU tests and parity tests"
exit $fail
