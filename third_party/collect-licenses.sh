#!/usr/bin/env bash
# Copies into third_party/licenses/ the license texts that a binary distribution of moe carries: the Debian
# copyright file of every Debian and Runtime package of the build scope in third_party/manifest, one per
# Debian source package (<source>.copyright), and the LicenseFile of the gpu scope (CUDA runtime and cuBLAS,
# NCCL: <first word of Name>.License.txt). Run it after changing the manifest; tests/scripts/third_party.sh
# fails while a file is missing or differs from the installed one.
#   third_party/collect-licenses.sh [--list]     --list: print "package source" pairs and copy nothing
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
source "$ROOT/third_party/manifest.sh"
[[ "${1:-}" == -h || "${1:-}" == --help ]] && { sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0; }
for pkg in $({ manifest_words Debian build; manifest_words Runtime build; } | sort -u); do
  src="$(dpkg-query -W -f='${source:Package}' "$pkg" 2>/dev/null)" || { echo "collect-licenses: $pkg is not installed" >&2; exit 1; }
  if [[ "${1:-}" == --list ]]; then echo "$pkg $src"; continue; fi
  cp "/usr/share/doc/$pkg/copyright" "$ROOT/third_party/licenses/$src.copyright"
done
while IFS=$'\t' read -r name file; do
  [[ -n "$file" ]] || continue
  target="$(echo "${name%% *}" | tr 'A-Z' 'a-z').License.txt"
  if [[ "${1:-}" == --list ]]; then echo "$name $target"; continue; fi
  src=(/$file)
  [[ -f "${src[0]}" ]] || { echo "collect-licenses: $name: no /$file (CUDA not installed here): kept the old copy" >&2; continue; }
  cp "${src[0]}" "$ROOT/third_party/licenses/$target"
done < <(manifest_table Name,LicenseFile gpu)
[[ "${1:-}" == --list ]] || echo "collect-licenses: $(ls "$ROOT"/third_party/licenses/*.copyright | wc -l) files in third_party/licenses"
