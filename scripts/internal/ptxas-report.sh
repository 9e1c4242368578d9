#!/usr/bin/env bash
# CUDA compiler launcher (CMake's CUDA_COMPILER_LAUNCHER) of builds with MOE_PTXAS_REPORTS=ON, whose
# nvcc runs with -Xptxas=-v: runs the compile command, keeps the ptxas report lines in
# OUT_DIR/<object file name>.txt for scripts/internal/register-budget.sh and passes every other line through.
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
"$@" 2> "$log"
rc=$?
report='^ptxas info|bytes stack frame'
grep -Ev "$report" "$log" >&2
[[ -n "$obj" ]] && grep -E "$report" "$log" > "$out/$(basename "$obj").txt"
rm -f "$log"
exit $rc
