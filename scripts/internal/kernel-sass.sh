#!/usr/bin/env bash
# The ctest kernel_sass: the kernel variant table of this build's moe-bench (--list-variants) checked
# against the SASS and ptxas reports of the nvcc build for sm_90a (scripts/internal/kernel-sass.py).
#   kernel-sass.sh MOE_BENCH PTXAS_DIR KERNELS_TSV OUT_DIR
set -euo pipefail
bench="${1:?usage: kernel-sass.sh MOE_BENCH PTXAS_DIR KERNELS_TSV OUT_DIR}"
ptxas="${2:?}"
kernels="${3:?}"
out="${4:?}"
if ! command -v nvcc >/dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then export PATH="/usr/local/cuda/bin:$PATH"; fi
command -v nvcc >/dev/null || { echo "kernel-sass: nvcc is needed (the probes that calibrate the opcodes)" >&2; exit 1; }
[[ -d "$ptxas/../cubin" ]] || { echo "kernel-sass: no cubins in $ptxas/../cubin (scripts/gpu-pack.sh keeps them)" >&2; exit 1; }
"$bench" --list-variants > "$out/kernel-variants.tsv"
check() { python3 "$(dirname "$0")/kernel-sass.py" "$ptxas/../cubin" "$ptxas" "$kernels" "$1" "$2" "$(command -v nvcc)"; }
check "$out/kernel-variants.tsv" "$out/kernel-report.tsv" || exit 1
# The check can fail: the same kernels, with the f32 grouped GEMM's variant said to be built on mma.sync.
awk -F'\t' -v OFS='\t' '$1 == "grouped_gemm:simt" { $5 = "HMMA" } 1' "$out/kernel-variants.tsv" > "$out/kernel-variants.wrong.tsv"
if check "$out/kernel-variants.wrong.tsv" /dev/null > "$out/kernel-sass.wrong.log" 2>&1 ||
   ! grep -q 'grouped_gemm:simt: .*grouped_fma_kernel holds no HMMA' "$out/kernel-sass.wrong.log"; then
  echo "kernel-sass: a SIMT kernel declared HMMA was not caught:" >&2; cat "$out/kernel-sass.wrong.log" >&2; exit 1
fi
echo "kernel-sass: a kernel without the declared instruction class is caught (grouped_fma_kernel as HMMA)"
