#!/usr/bin/env bash
# Downloads the .deb files of moe's dependencies (third_party/manifest: the Debian and Runtime packages of
# the build and test scopes) for machines without package access:
#   scripts/bundle-deps.sh [DIR]        on a Debian 12 machine with a package mirror (DIR: third_party/debs)
#   then, on the offline machine:  scripts/install-deps.sh --offline [DIR] && scripts/test.sh --no-install
# The offline machine needs its own compiler, CMake and (for GPU builds) CUDA toolkit: the toolchain scope
# is not bundled.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
source "$ROOT/third_party/manifest.sh"
DIR="${1:-$ROOT/third_party/debs}"
if [[ "$DIR" == -h || "$DIR" == --help ]]; then sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0; fi
mapfile -t packages < <({ manifest_words Debian build test; manifest_words Runtime build test; } | sort -u)
mkdir -p "$DIR"
cd "$DIR"
apt-get download "${packages[@]}"
echo "bundle-deps: $(ls -1 *.deb | wc -l) packages in $(pwd)"
