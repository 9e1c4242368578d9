#!/usr/bin/env bash
# Register budgets of the CUDA kernels for sm_90, from the ptxas reports of an nvcc build with
# MOE_PTXAS_REPORTS=ON (scripts/internal/ptxas-report.sh): fails when a kernel spills more than MAX_SPILL bytes
# (stores + loads; default 0), or when its registers times the largest block it is launched with
# exceed the 65,536 registers of an SM (the launch would fail: too many resources requested). The
# block sizes come from the CUDA emulator's run of the parity suite (KERNELS_TSV: name, launched, largest
# block; written by tests/gpu); a kernel missing there counts with 1,024 threads. Only moe's kernels are
# judged: cub's own kernels (behind the embedding backward's sort) come with cub's launch bounds.
#   register-budget.sh PTXAS_DIR KERNELS_TSV [MAX_SPILL]
set -euo pipefail
dir="${1:?usage: register-budget.sh PTXAS_DIR KERNELS_TSV [MAX_SPILL]}"
tsv="${2:?usage: register-budget.sh PTXAS_DIR KERNELS_TSV [MAX_SPILL]}"
max_spill="${3:-0}"
shopt -s nullglob
reports=("$dir"/*.txt)
(( ${#reports[@]} )) || { echo "register-budget: no ptxas reports in $dir" >&2; exit 1; }
[[ -f "$tsv" ]] || { echo "register-budget: no kernel list $tsv (the gpu suite writes it)" >&2; exit 1; }
command -v c++filt >/dev/null || { echo "register-budget: c++filt (binutils) is needed" >&2; exit 1; }

# mangled name, registers, spill bytes: one line per sm_90 entry function (POSIX awk: no gawk needed).
cat "${reports[@]}" | awk '
  /Compiling entry function/ { name = $0; sub(/.*function ./, "", name); sub(/. for .*/, "", name); sm90 = ($0 ~ /sm_90/) }
  /bytes spill stores/ { spill = $5 + $9 }
  /Used [0-9]+ registers/ && name != "" { regs = $0; sub(/.*Used /, "", regs); sub(/ registers.*/, "", regs)
    if (sm90) print name, regs, spill; name = "" }' | sort -u > "$dir/../sm90-kernels.txt"
(( $(wc -l < "$dir/../sm90-kernels.txt") > 0 )) || { echo "register-budget: no sm_90 kernels in the reports" >&2; exit 1; }

# The emulator names kernels like c++filt without the return type and parameters.
strip_signature() {
  awk '{ s = $0; sub(/^void /, "", s); d = 0
         for (i = length(s); i > 0; --i) { c = substr(s, i, 1); if (c == ")") d++; else if (c == "(" && --d == 0) { s = substr(s, 1, i - 1); break } }
         print s }'
}
paste -d '\t' <(cut -d' ' -f1 "$dir/../sm90-kernels.txt" | c++filt | strip_signature) \
              <(cut -d' ' -f2,3 "$dir/../sm90-kernels.txt") |
awk -F'\t' -v tsv="$tsv" -v max_spill="$max_spill" '
  BEGIN { while ((getline line < tsv) > 0) { split(line, f, "\t"); threads[f[1]] = f[3] } }
  $1 !~ /^moe::/ { next }
  { split($2, v, " "); regs = v[1]; spill = v[2]; n++
    if (spill > spilled) { spilled = spill; spiller = $1 }
    t = ($1 in threads) && threads[$1] > 0 ? threads[$1] : 1024
    if (!($1 in threads)) unknown++
    if (spill > max_spill) { printf "register-budget: %s spills %d bytes (budget %d)\n", $1, spill, max_spill; bad++ }
    if (regs * t > 65536) { printf "register-budget: %s: %d registers x %d threads > 65536\n", $1, regs, t; bad++ }
    if (regs > most) { most = regs; who = $1 } }
  END { printf "register-budget: %d sm_90 kernels of moe, most registers %d (%s), largest spill %d bytes (%s), %d not in the emulator list, %d problems\n",
               n, most, who, spilled, spiller, unknown, bad
        exit bad > 0 }'
