#!/usr/bin/env bash
# CUDA compiler launcher (CMake's CUDA_COMPILER_LAUNCHER) of builds with MOE_PTXAS_REPORTS=ON, whose
# nvcc runs with -Xptxas=-v: runs the compile command, keeps the ptxas report lines in
# OUT_DIR/<object file name>.txt for scripts/internal/register-budget.sh and passes every other line
# through; a compile of a .cu file also keeps its cubins (nvcc --keep) in OUT_DIR/../cubin/ for
# scripts/internal/kernel-sass.py, which reads the SASS instructions of each kernel there.
#   ptxas-report.sh OUT_DIR COMPILER ARGS...
set -uo pipefail
out="$1"
shift
obj=""
prev=""
for a in "$@"; do
  [[ "$prev" == "-o" ]] && obj="$a"
  prev="$a"
done
mkdir -p "$out"
log="$(mktemp)"
keep=""
if [[ -n "$obj" && " $* " == *" -c "* ]]; then
  keep="$(mktemp -d)"
  "$@" --keep --keep-dir "$keep" 2> "$log"
  rc=$?
  mkdir -p "$out/../cubin"
  for c in "$keep"/*.cubin; do [[ -f "$c" ]] && mv "$c" "$out/../cubin/$(basename "$obj").$(basename "$c")"; done
  rm -rf "$keep"
else
  "$@" 2> "$log"
  rc=$?
fi
report='^ptxas info|bytes stack frame'
grep -Ev "$report" "$log" >&2
[[ -n "$obj" ]] && grep -E "$report" "$log" > "$out/$(basename "$obj").txt"
rm -f "$log"
exit $rc
