#!/usr/bin/env bash
# Keeps third_party/manifest the one true list of what moe depends on (args: bin dir, data dir — unused):
# 1. every stanza has the fields the format asks for and a known scope;
# 2. the installed Debian packages lie inside their stanza's Range;
# 3. every shared library the programs in the bin dir load comes from a package the manifest lists
#    (or from .deps/, the unpacked bundle, or the CUDA toolkit's folder);
# 4. third_party/licenses/ holds the current license text of every package a binary distribution carries;
# 5. no script installs packages behind the manifest's back (apt-get only in install-deps/bundle-deps).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BIN="${1:?usage: third_party.sh BIN_DIR [DATA_DIR]}"
source "$ROOT/third_party/manifest.sh"
fail=0
problem() { echo "third_party: $*"; fail=1; }

while IFS=$'\t' read -r name range tested license scope why; do
  [[ -n "$range" && -n "$tested" && -n "$license" && -n "$why" ]] || problem "stanza '$name' lacks Range, Tested, License or Why"
  [[ " toolchain build test fuzz bench gpu " == *" ${scope%% *} "* ]] || problem "stanza '$name' has unknown Scope '$scope'"
done < <(manifest_table Name,Range,Tested,License,Scope,Why)

while read -r p; do problem "version: $p"; done < <(manifest_version_problems)

listed=" $(manifest_words Debian | tr '\n' ' ') $(manifest_words Runtime | tr '\n' ' ') "
declare -A users  # each shared library the programs load -> the programs
for prog in "$BIN"/moe-*; do
  while read -r lib; do users[$(readlink -f "$lib")]+=" $(basename "$prog")"; done < <(ldd "$prog" | awk '$3 ~ /^\// {print $3}')
done
checked=0
for real in "${!users[@]}"; do
  [[ "$real" == "$ROOT"/.deps/* || "$real" == /usr/local/cuda* ]] && continue
  owner="$(dpkg -S "$real" 2>/dev/null || dpkg -S "${real#/usr}" 2>/dev/null || true)"
  owner="${owner%%:*}"
  [[ -n "$owner" ]] || { problem "$real (loaded by${users[$real]}) belongs to no Debian package"; continue; }
  [[ "$listed" == *" $owner "* ]] || problem "$real (loaded by${users[$real]}) comes from $owner, which third_party/manifest does not list"
  checked=$((checked + 1))
done
(( checked > 0 )) || problem "no programs (moe-*) with shared libraries in $BIN"

pairs="$("$ROOT/third_party/collect-licenses.sh" --list)" || problem "a build package of the manifest is not installed"
while read -r pkg src; do
  [[ -n "$pkg" && "$src" != *.License.txt ]] || continue
  [[ -f "$ROOT/third_party/licenses/$src.copyright" ]] || { problem "no third_party/licenses/$src.copyright ($pkg)"; continue; }
  cmp -s "/usr/share/doc/$pkg/copyright" "$ROOT/third_party/licenses/$src.copyright" ||
    problem "third_party/licenses/$src.copyright differs from /usr/share/doc/$pkg/copyright (run third_party/collect-licenses.sh)"
done <<<"$pairs"
while IFS=$'\t' read -r name file; do
  [[ -n "$file" ]] || continue
  target="$ROOT/third_party/licenses/$(echo "${name%% *}" | tr 'A-Z' 'a-z').License.txt"
  [[ -f "$target" ]] || problem "no $target for $name"
  src=(/$file)
  [[ -f "${src[0]}" ]] && ! cmp -s "${src[0]}" "$target" && problem "$target differs from ${src[0]}"
done < <(manifest_table Name,LicenseFile gpu)

if grep -rln "apt-get \(install\|download\)" "$ROOT/scripts" "$ROOT/tests/scripts" "$ROOT/.ci" 2>/dev/null |
   grep -v "scripts/install-deps.sh$\|scripts/bundle-deps.sh$\|tests/scripts/third_party.sh$"; then
  problem "the scripts above install packages themselves: list them in third_party/manifest instead"
fi

(( fail == 0 )) && echo "third_party: manifest complete ($checked shared libraries of $(ls "$BIN"/moe-* | wc -l) programs), versions in range, licenses current"
exit $fail
